#include "ctl/interrupt.h"

namespace mcpctl {

namespace {

volatile sig_atomic_t g_interrupted = 0;

// Note the ^C; the wait it interrupted returns EINTR.
void on_sigint(int) {
    g_interrupted = 1;
}

}  // namespace

InterruptGuard::InterruptGuard() {
    g_interrupted = 0;
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &old_mask_);
    wait_mask_ = old_mask_;
    sigdelset(&wait_mask_, SIGINT);

    sigaction(SIGINT, nullptr, &old_action_);
    // A shell starts background jobs with SIGINT ignored; keep it that way.
    if (old_action_.sa_handler == SIG_IGN) return;
    struct sigaction action {};
    action.sa_handler = on_sigint;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, nullptr);
}

InterruptGuard::~InterruptGuard() {
    // Unblock first, while our handler still catches a pending ^C, then restore the action.
    sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    sigaction(SIGINT, &old_action_, nullptr);
}

bool InterruptGuard::fired() const {
    return g_interrupted != 0;
}

}  // namespace mcpctl
