// WriteCoalescer: eager writes, and writes held within a burst while more input waits.
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "common/unique_fd.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/eager_write.h"
#include "daemon/io/event_loop.h"

using mcpd::MoreInput;
using mcpd::WriteBurst;
using mcpd::WriteCoalescer;

namespace {

struct Destination {
    explicit Destination(event_base* base) {
        int fds[2];
        REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
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
};

}  // namespace

TEST_CASE("write coalescer: with nothing queued, a line is written at once", "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer& writes = loop.writes();
    writes.write_or_queue_line(to.bev.get(), "hello");
    CHECK(evbuffer_get_length(to.bev.output()) == 0);
    CHECK(to.received() == "hello\n");
    // Within a burst but with nothing behind the line: not held either.
    const WriteBurst burst(writes);
    writes.write_or_queue_line(to.bev.get(), "again");
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
            writes.write_or_queue_line(to.bev.get(), "one");
        }
        CHECK(writes.held_bytes(to.bev.get()) == 4);  // the inner burst is not the outermost
        // Nothing behind this one, but it keeps its place after what is held.
        writes.write_or_queue_line(to.bev.get(), "two");
        CHECK(writes.held_bytes(to.bev.get()) == 8);
        CHECK(to.received().empty());
    }
    CHECK(writes.held_bytes(to.bev.get()) == 0);
    CHECK(to.received() == "one\ntwo\n");
}

TEST_CASE("write coalescer: each coalescer holds its own writes", "[eager_write]") {
    mcpd::EventLoop loop;
    Destination to(loop.base());
    WriteCoalescer first;
    WriteCoalescer second;
    const WriteBurst burst(first);
    const MoreInput more(first, true);
    second.write_or_queue_line(to.bev.get(), "direct");  // no burst of its own
    CHECK(to.received() == "direct\n");
    first.write_or_queue_line(to.bev.get(), "held");
    CHECK(first.held_bytes(to.bev.get()) == 5);
    CHECK(second.held_bytes(to.bev.get()) == 0);
    first.drop_held_writes(to.bev.get());
    CHECK(first.held_bytes(to.bev.get()) == 0);
}
