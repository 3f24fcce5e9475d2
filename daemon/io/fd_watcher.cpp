#include "daemon/io/fd_watcher.h"

#include "common/check.h"

namespace mcpd {

FdWatcher::FdWatcher(event_base* base, int fd, short events, std::function<void()> on_ready)
    : state_(std::make_unique<State>()) {
    state_->on_ready = std::move(on_ready);
    state_->ev = event_new(base, fd, events, &FdWatcher::fire, state_.get());
    MCPD_CHECK(state_->ev != nullptr, "libevent could not allocate an event");
    state_->persist = (events & EV_PERSIST) != 0;
    state_->added = event_add(state_->ev, nullptr) == 0;
}

FdWatcher::~FdWatcher() = default;

FdWatcher::State::~State() {
    if (ev != nullptr) event_free(ev);
}

int FdWatcher::fd() const { return state_ == nullptr ? -1 : event_get_fd(state_->ev); }

bool FdWatcher::registered() const {
    return state_ != nullptr && event_pending(state_->ev, EV_READ | EV_WRITE, nullptr) != 0;
}

void FdWatcher::enable() {
    // Asked on every request of a connection: libevent is called only when something changes.
    if (state_ != nullptr && !state_->added) state_->added = event_add(state_->ev, nullptr) == 0;
}

void FdWatcher::disable() {
    if (state_ != nullptr && state_->added) {
        event_del(state_->ev);
        state_->added = false;
    }
}

void FdWatcher::fire(evutil_socket_t, short, void* state) {
    auto* s = static_cast<State*>(state);
    if (!s->persist) s->added = false;  // libevent has let it go
    // Nothing here touches the state after the callback: it may reset the watcher.
    s->on_ready();
}

}  // namespace mcpd
