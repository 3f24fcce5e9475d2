// An owned libevent readiness event on a descriptor (Kakoune's FDWatcher).
#pragma once

#include <event2/event.h>

#include <functional>
#include <memory>

namespace mcpd {

// Registers on construction and unregisters and frees on destruction; move-only. The callback
// stays bound to the watcher's state, not to the object, so it still runs after a move. The
// descriptor is not owned: whoever owns it keeps the watcher from outliving it.
class FdWatcher {
public:
    FdWatcher() = default;  // watches nothing
    // Watch `fd` for `events` (EV_READ, EV_WRITE, EV_PERSIST), registered at once.
    FdWatcher(event_base* base, int fd, short events, std::function<void()> on_ready);
    ~FdWatcher();
    FdWatcher(FdWatcher&& other) noexcept = default;
    FdWatcher& operator=(FdWatcher&& other) noexcept = default;
    FdWatcher(const FdWatcher&) = delete;
    FdWatcher& operator=(const FdWatcher&) = delete;

    explicit operator bool() const { return state_ != nullptr; }
    int fd() const;
    // Whether readiness is being waited for now.
    bool registered() const;
    // Wait again (after disable(), or after a watcher without EV_PERSIST has fired).
    void enable();
    void disable();
    // Unregister and free now; the watcher then watches nothing. May be called from the
    // watcher's own callback.
    void reset() { state_.reset(); }

private:
    struct State {
        ~State();
        std::function<void()> on_ready;
        event* ev = nullptr;
        bool persist = false;  // EV_PERSIST, kept: asked on every readiness of every session
        bool added = false;  // registered with libevent, as far as enable/disable/fire know
    };
    static void fire(evutil_socket_t, short, void* state);
    std::unique_ptr<State> state_;
};

}  // namespace mcpd
