// Running a piece of code when a scope ends, however it ends: restoring a umask or a signal
// mask right after the call that needed it changed, without a restore on every return path.
#pragma once

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

}  // namespace mcpd
