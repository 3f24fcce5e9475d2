#include "daemon/io/buffer_event.h"

#include <event2/buffer.h>

#include <vector>

namespace mcpd {

BufferEvent BufferEvent::over(event_base* base, UniqueFd fd) {
    bufferevent* bev = bufferevent_socket_new(base, fd.get(), BEV_OPT_CLOSE_ON_FREE);
    if (bev != nullptr) fd.release();  // the bufferevent closes it now
    return BufferEvent(bev);
}

void BufferEvent::clear_callbacks() {
    if (bev_ != nullptr) bufferevent_setcb(bev_, nullptr, nullptr, nullptr, nullptr);
}

std::string buffered_bytes(evbuffer* buffer) {
    std::string bytes;
    const int chunks = evbuffer_peek(buffer, -1, nullptr, nullptr, 0);
    if (chunks <= 0) return bytes;
    std::vector<evbuffer_iovec> parts(static_cast<std::size_t>(chunks));
    evbuffer_peek(buffer, -1, nullptr, parts.data(), chunks);
    bytes.reserve(evbuffer_get_length(buffer));
    for (const evbuffer_iovec& part : parts) bytes.append(static_cast<const char*>(part.iov_base), part.iov_len);
    return bytes;
}

void BufferEvent::reset() {
    if (bev_ == nullptr) return;
    clear_callbacks();
    bufferevent_free(std::exchange(bev_, nullptr));
}

}  // namespace mcpd
