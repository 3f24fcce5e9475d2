// Catching ^C while a command waits on the daemon (logs --follow).
#pragma once

#include <signal.h>

namespace mcpctl {

// SIGINT is caught instead of killing the process for as long as the guard lives. It stays
// blocked except inside a wait that uses wait_mask() (ppoll), so a ^C can never slip in
// between checking fired() and starting to wait.
class InterruptGuard {
public:
    InterruptGuard();
    ~InterruptGuard();
    InterruptGuard(const InterruptGuard&) = delete;
    InterruptGuard& operator=(const InterruptGuard&) = delete;

    bool fired() const;
    // The signal mask to wait with: the one before the guard, SIGINT unblocked.
    const sigset_t& wait_mask() const { return wait_mask_; }

private:
    struct sigaction old_action_ {};
    sigset_t old_mask_{};
    sigset_t wait_mask_{};
};

}  // namespace mcpctl
