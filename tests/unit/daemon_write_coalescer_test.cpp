// WriteCoalescer: eager writes, writes held within a burst while more input waits, writes
// held across the callbacks of one pass of the event loop, and a large line's rest queued
// where it lies (LineLoan).
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/line_reader.h"
#include "common/unique_fd.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/eager_write.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/fd_watcher.h"
#include "daemon/io/line_loan.h"

using mcpd::HeldWrites;
using mcpd::MoreInput;
using mcpd::WriteBurst;
using mcpd::WriteCoalescer;

namespace {

// A bufferevent on one end of a socket pair; the test reads the other. SOCK_SEQPACKET keeps
// each write a record of its own, so one read returns what one write sent.
struct Destination {
    explicit Destination(event_base* base, int type = SOCK_STREAM) {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
        peer.reset(fds[1]);
        bev = mcpd::BufferEvent(bufferevent_socket_new(base, fds[0], BEV_OPT_CLOSE_ON_FREE));
    }
    std::string received() const {
        std::string got(4096, '\0');
        const ssize_t n = ::read(peer.get(), got.data(), got.size());
        got.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        return got;
    }
    mcpd::UniqueFd peer;
    mcpd::BufferEvent bev;
    HeldWrites held;
};

// Another callback still due in this pass: an event made active and never run.
struct OtherCallback {
    explicit OtherCallback(event_base* base)
        : ev(event_new(base, -1, 0, [](evutil_socket_t, short, void*) {}, nullptr)) {
        event_active(ev, EV_TIMEOUT, 0);
    }
    ~OtherCallback() { event_free(ev); }
    OtherCallback(const OtherCallback&) = delete;
    OtherCallback& operator=(const OtherCallback&) = delete;
    event* ev;
};

}  // namespace

TEST_CASE("write coalescer: with nothing queued, a line is written at once", "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer& writes = loop.writes();
    writes.write_or_queue_line(to.bev.get(), to.held, "hello");
    CHECK(evbuffer_get_length(to.bev.output()) == 0);
    CHECK(to.received() == "hello\n");
    // Within a burst but with nothing behind the line: not held either.
    const WriteBurst burst(writes);
    writes.write_or_queue_line(to.bev.get(), to.held, "again");
    CHECK(to.received() == "again\n");
}

TEST_CASE("write coalescer: held while more input waits, written when the burst ends",
          "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer writes;
    {
        const WriteBurst outer(writes);
        {
            const WriteBurst inner(writes);
            const MoreInput more(writes, true);
            writes.write_or_queue_line(to.bev.get(), to.held, "one");
        }
        CHECK(to.held.size() == 4);  // the inner burst is not the outermost
        // Nothing behind this one, but it keeps its place after what is held.
        writes.write_or_queue_line(to.bev.get(), to.held, "two");
        CHECK(to.held.size() == 8);
        CHECK(to.received().empty());
    }
    CHECK(to.held.size() == 0);
    CHECK(to.received() == "one\ntwo\n");
}

TEST_CASE("write coalescer: behind bytes already queued, a burst's lines join them in one piece",
          "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer writes;
    // What the descriptor did not take of an earlier write waits in the output buffer.
    evbuffer* out = to.bev.output();
    evbuffer_add(out, "queued\n", 7);
    int additions = 0;
    evbuffer_add_cb(
        out,
        [](evbuffer*, const evbuffer_cb_info* info, void* count) {
            if (info->n_added > 0) ++*static_cast<int*>(count);
        },
        &additions);
    {
        const WriteBurst burst(writes);
        const MoreInput more(writes, true);
        writes.write_or_queue_line(to.bev.get(), to.held, "one");
        writes.write_or_queue_line(to.bev.get(), to.held, "two");
        CHECK(to.held.size() == 8);
        CHECK(evbuffer_get_length(out) == 7);
    }
    // One addition behind what waited, in order; nothing written past the queue.
    CHECK(additions == 1);
    CHECK(to.held.size() == 0);
    const auto length = static_cast<ev_ssize_t>(evbuffer_get_length(out));
    CHECK(std::string_view(reinterpret_cast<const char*>(evbuffer_pullup(out, length)),
                           static_cast<std::size_t>(length)) == "queued\none\ntwo\n");
    CHECK(to.received().empty());
    // Behind a queue, what is held stays small: the queue is what max_queued_output counts.
    {
        const WriteBurst burst(writes);
        const MoreInput more(writes, true);
        const std::string line(999, 'x');
        std::size_t most = 0;
        for (int i = 0; i < 40; ++i) {
            writes.write_or_queue_line(to.bev.get(), to.held, line);
            most = std::max(most, to.held.size());
        }
        CHECK(most <= 16 * 1024);
        CHECK(evbuffer_get_length(out) + to.held.size() == 15 + 40 * 1000);
    }
    CHECK(evbuffer_get_length(out) == 15 + 40 * 1000);
}

TEST_CASE("write coalescer: each coalescer holds its own writes", "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer first;
    WriteCoalescer second;
    const WriteBurst burst(first);
    const MoreInput more(first, true);
    HeldWrites elsewhere;
    second.write_or_queue_line(to.bev.get(), elsewhere, "direct");  // no burst of its own
    CHECK(to.received() == "direct\n");
    first.write_or_queue_line(to.bev.get(), to.held, "held");
    CHECK(to.held.size() == 5);
    CHECK(elsewhere.size() == 0);
    first.drop_held_writes(to.held);
    CHECK(to.held.size() == 0);
}

TEST_CASE("write coalescer: attached to its loop, writes are held while other callbacks of the "
          "pass are due, one write per destination when they have run",
          "[eager_write]") {
    mcpd::EventLoop loop;
    Destination a(loop.base(), SOCK_SEQPACKET);
    Destination b(loop.base(), SOCK_SEQPACKET);
    Destination c(loop.base(), SOCK_SEQPACKET);
    WriteCoalescer& writes = loop.writes();  // attached by the loop
    {
        const OtherCallback other(loop.base());
        // Nothing waits behind these lines, but another callback of the pass is due.
        writes.write_or_queue_line(a.bev.get(), a.held, "one");
        writes.write_or_queue_line(b.bev.get(), b.held, "uno");
    }
    // The pass's last callback: after what is held for a, and at once for c.
    writes.write_or_queue_line(a.bev.get(), a.held, "two");
    writes.write_or_queue_line(c.bev.get(), c.held, "eins");
    CHECK(a.held.size() == 8);
    CHECK(b.held.size() == 4);
    CHECK(c.held.size() == 0);
    CHECK(a.received().empty());
    CHECK(c.received() == "eins\n");
    // The flush was made active behind them: one pass of the loop runs it.
    event_base_loop(loop.base(), EVLOOP_NONBLOCK);
    CHECK(a.held.size() == 0);
    CHECK(a.received() == "one\ntwo\n");  // one record: one write
    CHECK(a.received().empty());
    CHECK(b.received() == "uno\n");
    // With nothing else due, writes are eager again.
    writes.write_or_queue_line(a.bev.get(), a.held, "three");
    CHECK(a.received() == "three\n");
}

TEST_CASE("write coalescer: flush writes what a pass holds before its end, and a destination "
          "freed while held is forgotten",
          "[eager_write]") {
    mcpd::EventLoop loop;
    Destination kept(loop.base());
    auto gone = std::make_unique<Destination>(loop.base());
    WriteCoalescer& writes = loop.writes();
    const OtherCallback other(loop.base());
    writes.write_or_queue_line(kept.bev.get(), kept.held, "early");
    CHECK(kept.held.size() == 6);
    writes.flush();
    CHECK(kept.held.size() == 0);
    CHECK(kept.received() == "early\n");
    writes.write_or_queue_line(gone->bev.get(), gone->held, "never");
    writes.write_or_queue_line(kept.bev.get(), kept.held, "late");
    gone.reset();  // its HeldWrites leaves the coalescer's list as it goes
    writes.flush();
    CHECK(kept.received() == "late\n");
}

TEST_CASE("event loop: what the callbacks of one pass write leaves in one write per destination",
          "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base(), SOCK_SEQPACKET);
    int left[2], right[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, left) == 0);
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, right) == 0);
    const mcpd::UniqueFd l0(left[0]), l1(left[1]), r0(right[0]), r1(right[1]);
    int handled = 0;
    const auto relay = [&](int fd) {
        char line[16] = {};
        const ssize_t n = ::read(fd, line, sizeof line);
        REQUIRE(n > 0);
        loop.writes().write_or_queue_line(to.bev.get(), to.held,
                                          std::string_view(line, static_cast<std::size_t>(n)));
        if (++handled == 2) event_base_loopexit(loop.base(), nullptr);  // after this pass
    };
    mcpd::FdWatcher from_left(loop.base(), l0.get(), EV_READ | EV_PERSIST,
                              [&] { relay(l0.get()); });
    mcpd::FdWatcher from_right(loop.base(), r0.get(), EV_READ | EV_PERSIST,
                               [&] { relay(r0.get()); });
    // Both are readable before the loop looks: one pass handles both.
    REQUIRE(::write(l1.get(), "a", 1) == 1);
    REQUIRE(::write(r1.get(), "b", 1) == 1);
    CHECK(loop.run() == 0);
    CHECK(handled == 2);
    const std::string got = to.received();
    CHECK((got == "a\nb\n" || got == "b\na\n"));
    CHECK(to.received().empty());
}

TEST_CASE("write or queue bytes: written at once with nothing queued, behind what is otherwise",
          "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    mcpd::write_or_queue_bytes(to.bev.get(), "HTTP/1.1 200 OK\r\n\r\n");
    CHECK(evbuffer_get_length(to.bev.output()) == 0);
    CHECK(to.received() == "HTTP/1.1 200 OK\r\n\r\n");  // no newline added, nothing held
    // Something queued already: these bytes go behind it, in order.
    evbuffer_add(to.bev.output(), "first ", 6);
    mcpd::write_or_queue_bytes(to.bev.get(), "second");
    CHECK(evbuffer_get_length(to.bev.output()) == 12);
    CHECK(to.received().empty());
}

namespace {

// Everything the peer of `to` has, until it has `size` bytes, turning `loop` while it waits.
std::string drain(mcpd::EventLoop& loop, Destination& to, std::size_t size) {
    std::string got;
    std::string chunk(256 * 1024, '\0');
    while (got.size() < size) {
        const ssize_t n = ::read(to.peer.get(), chunk.data(), chunk.size());
        if (n > 0) got.append(chunk.data(), static_cast<std::size_t>(n));
        event_base_loop(loop.base(), EVLOOP_NONBLOCK);
        if (n <= 0 && evbuffer_get_length(to.bev.output()) == 0) break;
    }
    return got;
}

// A line of `size` bytes, 'a' to 'z' repeating, then "\nnext\n" read after it.
std::string long_line_and_next(std::size_t size) {
    std::string text(size, '\0');
    for (std::size_t i = 0; i < size; ++i) text[i] = static_cast<char>('a' + i % 26);
    return text + "\nnext\n";
}

}  // namespace

TEST_CASE(
    "line loan: the unwritten rest of a large line is queued where it lies, and the reader "
    "goes on in a new buffer",
    "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer& writes = loop.writes();
    const std::size_t size = 3 * mcpd::LineLoan::kLendBytes;
    mcpd::LineReader reader(8 * size);
    reader.append(long_line_and_next(size));
    std::string_view line;
    REQUIRE(reader.next(line) == mcpd::LineReader::Result::line);
    REQUIRE(line.size() == size);
    const std::string expected = std::string(line) + "\n";
    {
        const mcpd::LineLoan loan(writes, reader, line);
        // The line goes out spliced, as an answer does: its head, a new id, the rest.
        const std::string_view pieces[] = {line.substr(0, 10), "42", line.substr(10)};
        writes.write_or_queue_line(to.bev.get(), to.held, pieces);
        // The socket took part of it; the rest waits in the queue without a copy.
        CHECK(evbuffer_get_length(to.bev.output()) > 0);
        CHECK(loan.taken());
        // The reader holds only what followed the line, in a buffer of its own.
        CHECK(reader.unread() == "next\n");
        CHECK(reader.capacity() < size);
    }
    // The line's buffer lives on in the queue after the loan: every byte arrives, in order.
    std::string_view next;
    REQUIRE(reader.next(next) == mcpd::LineReader::Result::line);
    CHECK(next == "next");
    const std::string got = drain(loop, to, expected.size() + 2);
    REQUIRE(got.size() == expected.size() + 2);
    CHECK(got.substr(0, 10) == expected.substr(0, 10));
    CHECK(got.substr(10, 2) == "42");
    CHECK(got.substr(12) == expected.substr(10));
}

TEST_CASE("line loan: a line shorter than the loan size, or bytes outside the line, are copied",
          "[eager_write]") {
    mcpd::EventLoop loop;
    WriteCoalescer& writes = loop.writes();
    {
        Destination to(loop.base());
        const std::size_t size = mcpd::LineLoan::kLendBytes - 1;
        mcpd::LineReader reader(8 * size);
        reader.append(long_line_and_next(size));
        std::string_view line;
        REQUIRE(reader.next(line) == mcpd::LineReader::Result::line);
        const mcpd::LineLoan loan(writes, reader, line);
        CHECK_FALSE(loan.covers(line.data(), line.size()));
        writes.write_or_queue_line(to.bev.get(), to.held, line);
        CHECK_FALSE(loan.taken());
        CHECK(drain(loop, to, size + 1) == std::string(line) + "\n");
    }
    {
        Destination to(loop.base());
        const std::size_t size = 2 * mcpd::LineLoan::kLendBytes;
        mcpd::LineReader reader(8 * size);
        reader.append(long_line_and_next(size));
        std::string_view line;
        REQUIRE(reader.next(line) == mcpd::LineReader::Result::line);
        const std::string copy(line);
        const mcpd::LineLoan loan(writes, reader, line);
        CHECK(loan.covers(line.data(), line.size()));
        CHECK_FALSE(loan.covers(line.data() - 1, 2));
        CHECK_FALSE(loan.covers(copy.data(), copy.size()));
        // A large message that is not the lent line is copied, and the reader keeps its buffer.
        writes.write_or_queue_line(to.bev.get(), to.held, copy);
        CHECK_FALSE(loan.taken());
        CHECK(reader.unread() == "next\n");
        CHECK(drain(loop, to, size + 1) == copy + "\n");
    }
}

TEST_CASE("line loan: loans nest, and the one made last is offered", "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer& writes = loop.writes();
    const std::size_t size = 2 * mcpd::LineLoan::kLendBytes;
    mcpd::LineReader outer_reader(8 * size), inner_reader(8 * size);
    outer_reader.append(long_line_and_next(size));
    inner_reader.append(long_line_and_next(size));
    std::string_view outer_line, inner_line;
    REQUIRE(outer_reader.next(outer_line) == mcpd::LineReader::Result::line);
    REQUIRE(inner_reader.next(inner_line) == mcpd::LineReader::Result::line);
    const std::string expected = std::string(outer_line) + "\n" + std::string(inner_line) + "\n";
    const mcpd::LineLoan outer(writes, outer_reader, outer_line);
    {
        const mcpd::LineLoan inner(writes, inner_reader, inner_line);
        writes.write_or_queue_line(to.bev.get(), to.held, inner_line);
        CHECK(inner.taken());
        CHECK_FALSE(outer.taken());
    }
    // With the inner loan over, the outer line is offered again.
    Destination other(loop.base());
    writes.write_or_queue_line(other.bev.get(), other.held, outer_line);
    CHECK(outer.taken());
    CHECK(drain(loop, to, size + 1) == std::string(inner_line) + "\n");
    CHECK(drain(loop, other, size + 1) == std::string(outer_line) + "\n");
}
