// An owned libevent bufferevent.
#pragma once

#include <event2/bufferevent.h>

#include <cstddef>
#include <string>
#include <utility>

#include "common/unique_fd.h"

namespace mcpd {

// The most one write to a session's socket or a child's pipe takes from its buffer (libevent's
// default is 16 KiB a loop turn): a large message leaves in few writes.
inline constexpr std::size_t kMaxSingleWrite = 1024 * 1024;

// Move-only. Freeing clears its callbacks first, so nothing the buffer does while it goes can
// call into an owner that is itself being destroyed. Ownership passes by moving the value;
// callbacks set on it point at whoever set them, so the giver clears them (clear_callbacks)
// before it hands the bufferevent on.
class BufferEvent {
public:
    BufferEvent() = default;
    // Adopts `bev` (may be null).
    explicit BufferEvent(bufferevent* bev) : bev_(bev) {}
    // A bufferevent over the socket or pipe `fd`, closed when it is freed. Empty when libevent
    // cannot allocate one.
    static BufferEvent over(event_base* base, UniqueFd fd);
    ~BufferEvent() { reset(); }
    BufferEvent(BufferEvent&& other) noexcept : bev_(std::exchange(other.bev_, nullptr)) {}
    BufferEvent& operator=(BufferEvent&& other) noexcept {
        if (this != &other) {
            reset();
            bev_ = std::exchange(other.bev_, nullptr);
        }
        return *this;
    }
    BufferEvent(const BufferEvent&) = delete;
    BufferEvent& operator=(const BufferEvent&) = delete;

    bufferevent* get() const { return bev_; }
    explicit operator bool() const { return bev_ != nullptr; }
    friend bool operator==(const BufferEvent& bev, std::nullptr_t) { return bev.bev_ == nullptr; }

    evbuffer* input() const { return bufferevent_get_input(bev_); }
    evbuffer* output() const { return bufferevent_get_output(bev_); }
    int fd() const { return bufferevent_getfd(bev_); }
    void clear_callbacks();
    // Clear the callbacks and free it now (closing its descriptor); empty afterwards.
    void reset();

private:
    bufferevent* bev_ = nullptr;
};

// Every byte `buffer` holds, copied without taking them out. Peeked, not copied out:
// evbuffer_copyout refuses a buffer whose start is frozen, as a bufferevent's output is (and
// its input's end).
std::string buffered_bytes(evbuffer* buffer);

}  // namespace mcpd
