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
// leaves in one write at its end (WriteCoalescer, WriteBurst, MoreInput).
// The descriptor must be non-blocking, as every session and child descriptor of mcpd is.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct bufferevent;

namespace mcpd {

// The write path of one event loop (EventLoop::writes()): eager writes, and the messages held
// back while a burst of input is handled.
//
// Held writes: within a WriteBurst, a message for a destination that nothing is queued on is
// held back while MoreInput says more lines wait behind the current one, and everything held
// goes out when the outermost burst ends, one write per destination (no EPOLLOUT arming, no
// extra loop turn). Readers open a burst around the lines of one read (daemon/io/line_source.h).
class WriteCoalescer {
public:
    WriteCoalescer() = default;
    WriteCoalescer(const WriteCoalescer&) = delete;
    WriteCoalescer& operator=(const WriteCoalescer&) = delete;

    // Queue `line` and a '\n' on `bev`'s output, writing at once what its descriptor takes
    // when nothing is queued ahead of them (or holding them, in a burst).
    void write_or_queue_line(bufferevent* bev, std::string_view line);
    // The same for a line in pieces, written in order (a message with an id spliced in).
    // What must be queued of a large message is copied once, into a block of its own that the
    // output buffer frees when it has been sent (see common/byte_buffer.h for why).
    void write_or_queue_line(bufferevent* bev, std::span<const std::string_view> pieces);

    // Bytes held for `bev` in the current burst (not yet in its output buffer).
    std::size_t held_bytes(bufferevent* bev) const;
    // Forget what is held for `bev` (it is being freed).
    void drop_held_writes(bufferevent* bev);
    // Forget it, handing it over.
    std::string take_held_writes(bufferevent* bev);

private:
    friend class WriteBurst;
    friend class MoreInput;

    // Messages held for one destination, written when the burst ends.
    struct Held {
        bufferevent* bev;
        std::string bytes;
    };
    Held* find_held(bufferevent* bev);
    void flush_held();

    std::vector<Held> held_;
    int burst_depth_ = 0;
    bool more_input_ = false;
    std::vector<iovec> parts_;  // reused for every write
};

// Opens a burst of `writes` for its lifetime; the outermost one's end writes what was held.
class WriteBurst {
public:
    explicit WriteBurst(WriteCoalescer& writes);
    ~WriteBurst();
    WriteBurst(const WriteBurst&) = delete;
    WriteBurst& operator=(const WriteBurst&) = delete;

private:
    WriteCoalescer& writes_;
};

// Set while a reader hands out a line with more input buffered behind it.
class MoreInput {
public:
    MoreInput(WriteCoalescer& writes, bool more);
    ~MoreInput();
    MoreInput(const MoreInput&) = delete;
    MoreInput& operator=(const MoreInput&) = delete;

private:
    WriteCoalescer& writes_;
    bool saved_;
};

}  // namespace mcpd
