// The daemon log never blocks on its output and never grows without bound.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/log_output.h"

using mcpd::log::LineOutput;

namespace {

// A pipe nobody reads until the test says so; its write end does not block.
struct UnreadPipe {
    UnreadPipe() {
        REQUIRE(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0);
    }
    ~UnreadPipe() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    std::string drain() {
        std::string out;
        char buf[65536];
        ssize_t n;
        while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
        return out;
    }
    int fds[2];
};

std::vector<std::string> captured;
void capture_line(mcpd::log::Level, std::string_view server, std::string_view message) {
    captured.push_back(std::string(server) + "|" + std::string(message));
}

}  // namespace

TEST_CASE("log lines to a full pipe are queued, bounded, and the drops are reported") {
    UnreadPipe pipe;
    LineOutput out(pipe.fds[1]);
    int backlogs = 0;
    static int* counter = nullptr;
    counter = &backlogs;
    out.on_backlog([] { ++*counter; });
    const std::string line(1000, 'x');
    // Far more than the pipe (64 KiB) and the queue (1 MiB) hold: every call returns at once.
    for (int i = 0; i < 5000; ++i) out.line(line + "\n");
    CHECK(backlogs == 1);
    CHECK(out.pending());
    CHECK(out.queued_bytes() <= mcpd::log::kMaxQueuedLogBytes);
    CHECK(out.dropped() > 0);
    const std::uint64_t dropped = out.dropped();

    // Someone reads again: the queue goes out whole lines at a time, then the note.
    std::string all;
    while (true) {
        all += pipe.drain();
        if (!out.flush()) break;
    }
    all += pipe.drain();
    CHECK_FALSE(out.pending());
    CHECK(all.find("mcpd: " + std::to_string(dropped) + " log lines were dropped") != std::string::npos);
    std::size_t lines = 0;
    for (const char c : all) lines += c == '\n' ? 1 : 0;
    CHECK(lines == 5000 - dropped + 1);
    // Nothing is cut mid-line: each line before the note is the whole line.
    CHECK(all.substr(0, line.size() + 1) == line + "\n");
}

TEST_CASE("a source over its rate is held back, and how many lines were is said") {
    captured.clear();
    mcpd::log::set_sink(&capture_line);
    const std::string source = "flood-" + std::to_string(::getpid());
    for (int i = 0; i < 20000; ++i) mcpd::log::info(source, "line " + std::to_string(i));
    const std::size_t written = captured.size();
    CHECK(written >= 1000);
    CHECK(written < 2000);  // the burst, and what the rate gave while the loop ran
    // Other sources are not held back by this one.
    mcpd::log::info("other-" + std::to_string(::getpid()), "hello");
    CHECK(captured.size() == written + 1);
    // The count is said at most once a second (a slow build may have said it once already
    // inside the loop): past a second, the next line of the source comes after the count.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    mcpd::log::info(source, "after the flood");
    REQUIRE(captured.size() == written + 3);
    CHECK(captured[written + 1].find(" log lines were not written (more than 200 a second") != std::string::npos);
    CHECK(captured[written + 2] == source + "|after the flood");
    mcpd::log::set_sink(nullptr);
}

TEST_CASE("a long message is cut, saying how long it was") {
    captured.clear();
    mcpd::log::set_sink(&capture_line);
    mcpd::log::warning("long-" + std::to_string(::getpid()), std::string(1024 * 1024, 'i'));
    REQUIRE(captured.size() == 1);
    CHECK(captured[0].size() < mcpd::log::kMaxMessageBytes + 100);
    CHECK(captured[0].find("... (1048576 bytes in all)") != std::string::npos);
    mcpd::log::set_sink(nullptr);
}
