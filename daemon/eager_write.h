// Writing a message to a bufferevent's descriptor at once when nothing is queued ahead of it.
//
// A bufferevent writes only from the loop: adding to an empty output buffer arms EV_WRITE
// (epoll_ctl), the next turn of the loop waits for writability (epoll_wait), writes, and
// disarms it (epoll_ctl): three system calls besides the write for every message when
// messages go one at a time, as MCP requests and replies mostly do. With the output buffer
// empty, writing straight away cannot reorder anything; what the descriptor does not take
// (or an error, which the bufferevent then meets and reports itself) is queued as before.
// When more input is already buffered behind the line being handled (pipelined requests, a
// burst of replies), writes are held and everything the burst produced for one destination
// leaves in one write at its end (WriteBurst, MoreInput).
// The descriptor must be non-blocking, as every session and child descriptor of mcpd is.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

struct bufferevent;

namespace mcpd {

// Queue `line` and a '\n' on `bev`'s output, writing at once what its descriptor takes when
// nothing is queued ahead of them.
void write_or_queue_line(bufferevent* bev, std::string_view line);
// The same for a line in pieces, written in order (a message with an id spliced in).
// What must be queued of a large message is copied once, into a block of its own that the
// output buffer frees when it has been sent (see common/byte_buffer.h for why).
void write_or_queue_line(bufferevent* bev, std::span<const std::string_view> pieces);

// Held writes: within a WriteBurst, a message for a destination that nothing is queued on is
// held back while MoreInput says more lines wait behind the current one, and everything held
// goes out when the outermost burst ends, one write per destination (no EPOLLOUT arming, no
// extra loop turn). Readers open a burst around the lines of one read.
class WriteBurst {
public:
    WriteBurst();
    ~WriteBurst();
    WriteBurst(const WriteBurst&) = delete;
    WriteBurst& operator=(const WriteBurst&) = delete;
};

// Bytes held for `bev` in the current burst (not yet in its output buffer).
std::size_t held_bytes(bufferevent* bev);
// Forget what is held for `bev` (it is being freed).
void drop_held_writes(bufferevent* bev);

// Set while a reader hands out a line with more input buffered behind it.
class MoreInput {
public:
    explicit MoreInput(bool more);
    ~MoreInput();
    MoreInput(const MoreInput&) = delete;
    MoreInput& operator=(const MoreInput&) = delete;

private:
    bool saved_;
};

}  // namespace mcpd
