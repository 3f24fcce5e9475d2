// LineSource over a real pipe and event loop: lines, a last line without a newline at EOF,
// lines over the limit, pausing, closing from a callback, and the burst its reads open.
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/line_source.h"

using mcpd::EventLoop;
using mcpd::LineSource;
using mcpd::UniqueFd;

namespace {

// A source on the read end of a pipe; the test writes the other end.
class Rig {
public:
    explicit Rig(std::size_t max_line = 64, bool keep_edges = false,
                 mcpd::WriteCoalescer* writes = nullptr) {
        int fds[2];
        REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
        read_end_.reset(fds[0]);
        write_end_.reset(fds[1]);
        LineSource::Callbacks callbacks;
        callbacks.on_line = [this](mcpd::wire::PaddedText line) {
            lines.emplace_back(line.text);
            if (on_line) on_line(line.text);
        };
        callbacks.on_oversized = [this] {
            oversized.push_back(source->reader().discarded_bytes());
        };
        callbacks.on_eof = [this] { ++eofs; };
        source.emplace(loop.base(), read_end_.get(), max_line, keep_edges, writes,
                       std::move(callbacks));
    }

    void write(std::string_view bytes) {
        REQUIRE(::write(write_end_.get(), bytes.data(), bytes.size()) ==
                static_cast<ssize_t>(bytes.size()));
        turn();
    }
    void close_writer() {
        write_end_.reset();
        turn();
    }
    void turn() { event_base_loop(loop.base(), EVLOOP_NONBLOCK); }

    EventLoop loop;
    std::optional<LineSource> source;
    std::vector<std::string> lines;
    std::vector<std::size_t> oversized;
    int eofs = 0;
    std::function<void(std::string_view)> on_line;

private:
    UniqueFd read_end_;
    UniqueFd write_end_;
};

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("line source: nothing is read before start", "[line_source]") {
    Rig rig;
    rig.write("early\n");
    CHECK(rig.lines.empty());
    rig.source->start();
    rig.turn();
    CHECK(rig.lines == Lines{"early"});
}

TEST_CASE("line source: lines as they complete, then the last one at EOF", "[line_source]") {
    Rig rig;
    rig.source->start();
    rig.write("one\ntw");
    CHECK(rig.lines == Lines{"one"});
    rig.write("o\nthree");
    CHECK(rig.lines == Lines{"one", "two"});
    CHECK(rig.eofs == 0);
    rig.close_writer();
    CHECK(rig.lines == Lines{"one", "two", "three"});
    CHECK(rig.eofs == 1);
    CHECK(rig.source->at_eof());
    rig.turn();
    CHECK(rig.eofs == 1);
}

TEST_CASE("line source: lines already buffered are handed out by start", "[line_source]") {
    Rig rig;
    rig.source->reader().append("taken over\nand more\n");
    rig.source->start();
    CHECK(rig.lines == Lines{"taken over", "and more"});
}

TEST_CASE("line source: a line over the limit is reported and skipped", "[line_source]") {
    SECTION("as soon as it is known to be too long") {
        Rig rig(8);
        rig.source->start();
        rig.write("0123456789abc");
        CHECK(rig.oversized.size() == 1);
        rig.write("def\nok\n");
        CHECK(rig.oversized.size() == 1);
        CHECK(rig.lines == Lines{"ok"});
    }
    SECTION("with its edges kept, once it has ended") {
        Rig rig(8, /*keep_edges=*/true);
        rig.source->start();
        rig.write("0123456789abc");
        CHECK(rig.oversized.empty());
        rig.write("def\nok\n");
        CHECK(rig.oversized.size() == 1);
        CHECK(rig.source->reader().discarded_head().starts_with("0123456789abc"));
        CHECK(rig.lines == Lines{"ok"});
    }
    SECTION("ended by EOF") {
        Rig rig(8, /*keep_edges=*/true);
        rig.source->start();
        rig.write("0123456789");
        rig.close_writer();
        CHECK(rig.oversized == std::vector<std::size_t>{10});
        CHECK(rig.eofs == 1);
    }
}

TEST_CASE("line source: paused, it neither reads nor hands out lines", "[line_source]") {
    Rig rig;
    rig.on_line = [&rig](std::string_view line) {
        if (line == "pause") rig.source->pause();
    };
    rig.source->start();
    rig.write("pause\nheld\n");
    CHECK(rig.lines == Lines{"pause"});
    CHECK(rig.source->paused());
    rig.write("later\n");
    CHECK(rig.lines == Lines{"pause"});
    rig.source->resume();
    CHECK(rig.lines == Lines{"pause", "held"});
    rig.turn();
    CHECK(rig.lines == Lines{"pause", "held", "later"});
}

TEST_CASE("line source: closed from a callback, it hands out nothing more", "[line_source]") {
    Rig rig;
    rig.on_line = [&rig](std::string_view line) {
        if (line == "stop") rig.source->close();
    };
    rig.source->start();
    rig.write("a\nstop\nb\n");
    CHECK(rig.lines == Lines{"a", "stop"});
    CHECK_FALSE(rig.source->open());
    rig.close_writer();
    CHECK(rig.eofs == 0);
    CHECK(rig.lines == Lines{"a", "stop"});
}

TEST_CASE("line source: the lines of one read share a burst of held writes", "[line_source]") {
    mcpd::WriteCoalescer writes;
    Rig rig(64, false, &writes);
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0);
    const UniqueFd peer(fds[1]);
    mcpd::BufferEvent out(bufferevent_socket_new(rig.loop.base(), fds[0], BEV_OPT_CLOSE_ON_FREE));
    mcpd::HeldWrites out_held;
    std::vector<std::size_t> held;
    rig.on_line = [&](std::string_view line) {
        writes.write_or_queue_line(out.get(), out_held, line);
        held.push_back(out_held.size());
    };
    rig.source->start();
    rig.write("a\nb\n");
    // Held while "b" waited behind "a"; with nothing behind "b", both then went in one write.
    CHECK(held == std::vector<std::size_t>{2, 4});
    CHECK(out_held.size() == 0);
    char got[8] = {};
    CHECK(::read(peer.get(), got, sizeof got) == 4);
    CHECK(std::string_view(got, 4) == "a\nb\n");
}
