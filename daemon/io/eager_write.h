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
// leaves in one write at its end (WriteCoalescer, WriteBurst, MoreInput). A coalescer attached
// to its event loop holds writes across the callbacks of one pass of the loop the same way:
// what all the sessions read in one pass said to a child leaves in one write, as do all the
// answers one session gets in it.
// The descriptor must be non-blocking, as every session and child descriptor of mcpd is.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <event2/util.h>

#include "common/byte_buffer.h"

struct bufferevent;
struct event;
struct event_base;

namespace mcpd {

class LineLoan;
class WriteCoalescer;

// Write `bytes` to `bev`'s descriptor at once when nothing is queued on its output, and queue
// what the descriptor does not take: bytes that are not a line (an HTTP response), never held.
void write_or_queue_bytes(bufferevent* bev, std::string_view bytes);
// The same for bytes in pieces, written in order with one writev (a response's head, framing
// and body, none of them copied together first).
void write_or_queue_bytes(bufferevent* bev, std::span<const std::string_view> pieces);

// What one destination (a session's output, a child's stdin) has held back in the current
// burst or pass of the loop. Owned beside the destination's bufferevent; its memory is kept
// from one pass to the next, so holding a message costs a copy and no allocation.
class HeldWrites {
public:
    HeldWrites() = default;
    ~HeldWrites();
    HeldWrites(const HeldWrites&) = delete;
    HeldWrites& operator=(const HeldWrites&) = delete;

    std::size_t size() const { return size_; }

private:
    friend class WriteCoalescer;
    // `pieces` and a newline, `bytes` in all, at the end: one room check and a copy per piece
    // (a std::string checks and updates itself for every piece).
    void append_line(std::span<const std::string_view> pieces, std::size_t bytes);
    std::string_view held() const { return {buffer_.data(), size_}; }
    // Empty again: memory kept while a pass fills a quarter of it (see eager_write.cpp).
    void emptied(std::size_t used);

    WriteCoalescer* queued_in_ = nullptr;  // set while it waits in a coalescer's list
    bufferevent* bev_ = nullptr;
    ByteBuffer buffer_;
    std::size_t size_ = 0;
};

// The write path of one event loop (EventLoop::writes()): eager writes, and the messages held
// back while a burst of input is handled.
//
// Held writes: within a WriteBurst, a message is held back while MoreInput says more lines wait
// behind the current one, and everything held goes out when the outermost burst ends, one
// write per destination (no EPOLLOUT arming, no extra loop turn); to a destination with bytes
// queued already, one addition to its output buffer behind them. Readers open a burst around
// the lines of one read (daemon/io/line_source.h).
//
// Attached to a loop (EventLoop does it), the coalescer also holds a message while other
// callbacks of the loop's current pass are still to run (they may add to the same
// destination), and writes what it holds from a callback of its own made active behind them:
// each destination gets one write per pass, as a minimal relay does. A message waits at most
// for the callbacks already due, none of which blocks; the pass's last callback writes at once
// to a destination nothing is held for (one message at a time costs no copy).
class WriteCoalescer {
public:
    WriteCoalescer() = default;
    ~WriteCoalescer();
    // Hold across the callbacks of `base`'s passes (see above); detach() before the base goes.
    void attach(event_base* base);
    void detach();
    WriteCoalescer(const WriteCoalescer&) = delete;
    WriteCoalescer& operator=(const WriteCoalescer&) = delete;

    // Queue `line` and a '\n' on `bev`'s output, writing at once what its descriptor takes
    // when nothing is queued ahead of them (or holding them in `held`, in a burst).
    void write_or_queue_line(bufferevent* bev, HeldWrites& held, std::string_view line);
    // The same for a line in pieces, written in order (a message with an id spliced in).
    // What must be queued of a large message is copied once, into a block of its own that the
    // output buffer frees when it has been sent (see common/byte_buffer.h for why).
    void write_or_queue_line(bufferevent* bev, HeldWrites& held,
                             std::span<const std::string_view> pieces);

    // Offer `loan`'s line to the writes made until the next call (daemon/io/line_loan.h): a
    // large part of it that must be queued is queued where it lies. Returns the loan offered
    // before (null: none).
    LineLoan* lend(LineLoan* loan) { return std::exchange(loan_, loan); }

    // Forget what `held` holds (its destination is being freed, or cut off).
    void drop_held_writes(HeldWrites& held);
    // Forget it, handing it over.
    std::string take_held_writes(HeldWrites& held);
    // Write everything held now, before the burst ends (an upgrade about to carry the
    // destinations' buffers).
    void flush();

private:
    friend class WriteBurst;
    friend class MoreInput;

    void hold(HeldWrites& held, bufferevent* bev);
    // Attached: callbacks of the loop's current pass other than the flush are still to run.
    bool pass_goes_on() const;
    static void on_flush(evutil_socket_t, short, void* self);
    void flush_held();

    std::vector<HeldWrites*> queued_;  // in the order they were first held; null when dropped
    int burst_depth_ = 0;
    bool more_input_ = false;
    event_base* base_ = nullptr;     // attached to this loop
    event* flush_event_ = nullptr;   // made active behind the pass's callbacks to write
    bool flush_armed_ = false;       // flush_event_ is active
    std::vector<iovec> parts_;  // reused for every write
    LineLoan* loan_ = nullptr;  // the large line being handed out, lent (null: none)
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
