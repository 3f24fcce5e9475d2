#include "daemon/io/fd_watcher.h"

#include "common/check.h"

namespace mcpd {

FdWatcher::FdWatcher(event_base* base, int fd, short events, std::function<void()> on_ready)
    : state_(std::make_unique<State>()) {
    state_->on_ready = std::move(on_ready);
    state_->ev = event_new(base, fd, events, &FdWatcher::fire, state_.get());
    MCPD_CHECK(state_->ev != nullptr, "libevent could not allocate an event");
    event_add(state_->ev, nullptr);
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
    if (state_ != nullptr) event_add(state_->ev, nullptr);
}

void FdWatcher::disable() {
    if (state_ != nullptr) event_del(state_->ev);
}

void FdWatcher::fire(evutil_socket_t, short, void* state) {
    // Nothing here touches the state after the callback: it may reset the watcher.
    static_cast<State*>(state)->on_ready();
}

}  // namespace mcpd
