#include "daemon/io/buffer_event.h"

namespace mcpd {

BufferEvent BufferEvent::over(event_base* base, UniqueFd fd) {
    bufferevent* bev = bufferevent_socket_new(base, fd.get(), BEV_OPT_CLOSE_ON_FREE);
    if (bev != nullptr) fd.release();  // the bufferevent closes it now
    return BufferEvent(bev);
}

void BufferEvent::clear_callbacks() {
    if (bev_ != nullptr) bufferevent_setcb(bev_, nullptr, nullptr, nullptr, nullptr);
}

void BufferEvent::reset() {
    if (bev_ == nullptr) return;
    clear_callbacks();
    bufferevent_free(std::exchange(bev_, nullptr));
}

}  // namespace mcpd
