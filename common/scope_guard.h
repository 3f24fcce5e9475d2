// Running a piece of code when a scope ends, however it ends: restoring a umask or a signal
// mask right after the call that needed it changed, without a restore on every return path.
#pragma once

#include <signal.h>

#include <utility>

namespace mcpd {

// Calls `fn` from its destructor (Kakoune's OnScopeEnd).
template <typename F>
class OnScopeEnd {
public:
    explicit OnScopeEnd(F fn) : fn_(std::move(fn)) {}
    ~OnScopeEnd() { fn_(); }
    OnScopeEnd(const OnScopeEnd&) = delete;
    OnScopeEnd& operator=(const OnScopeEnd&) = delete;

private:
    F fn_;
};

// Every signal blocked while it lives (around a fork, so the child runs no handler of the
// parent's before it has reset them); the mask before it is restored when it ends.
class AllSignalsBlocked {
public:
    AllSignalsBlocked() {
        sigset_t all;
        sigfillset(&all);
        ::sigprocmask(SIG_SETMASK, &all, &saved_);
    }
    ~AllSignalsBlocked() { ::sigprocmask(SIG_SETMASK, &saved_, nullptr); }
    AllSignalsBlocked(const AllSignalsBlocked&) = delete;
    AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

private:
    sigset_t saved_;
};

}  // namespace mcpd
