// Fault: a server floods its stdout with notifications while one session has stopped
// reading. The reading sessions get every notification and every reply, the stalled one is
// cut off at max_session_queue_bytes, and mcpd's memory stays bounded throughout.
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <charconv>

#include "flood_reader.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr std::size_t kQueueLimit = 4 * 1024 * 1024;  // max_session_queue_bytes, the default
constexpr int kFloodCount = 200000;
constexpr int kFloodBytes = 200;  // about 56 MB of notifications in all, far over the limit


}  // namespace

TEST_CASE("a server flooding stdout cuts off only the session that stopped reading", "[fault]") {
    const auto started = Clock::now();
    TestEnv env("fault-flood");
    // The server runs niced: on a loaded machine the readers, not the flood, get the CPU they
    // need to keep up (what is measured is mcpd's isolation of sessions, not who is faster).
    env.write_registry(
        server_toml("demo", {"-n", "10", "mcpd-demo-server", "--fault-tools"}, {}, "nice"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t mcpd = env.daemon_pid();
    const pid_t server = *env.server_pid("demo");

    McpSession stalled(env.socket(), "demo");
    stalled.initialize("stalled");  // and from now on it never reads
    std::vector<FloodReader> readers(2);
    for (std::size_t i = 0; i < readers.size(); ++i) {
        readers[i].session = std::make_unique<McpSession>(env.socket(), "demo");
        readers[i].session->initialize("reader-" + std::to_string(i));
    }
    const std::size_t idle_rss = *resident_bytes(mcpd);

    readers[0].session->queue(request_line(
        "\"flood\"", "tools/call",
        {{"name", "flood"}, {"arguments", {{"count", kFloodCount}, {"bytes", kFloodBytes}}}}));
    std::size_t peak_rss = idle_rss;
    const auto deadline = Clock::now() + 120s;
    std::vector<pollfd> fds(readers.size());
    const auto finished = [&] {
        return readers[0].flood_result &&
               std::all_of(readers.begin(), readers.end(), [](const FloodReader& r) {
                   return r.flood_seen == kFloodCount && r.echo_ok == r.echo_sent;
               });
    };
    bool ended = false;
    while (!finished() && !ended && Clock::now() < deadline) {
        for (std::size_t i = 0; i < readers.size(); ++i) {
            FloodReader& r = readers[i];
            // One echo call at a time from each reader, all through the flood.
            if (r.echo_ok == r.echo_sent && !r.flood_result.has_value()) r.send_echo();
            const bool writing = r.session->output_waiting() && r.session->flush();
            fds[i] = pollfd{r.session->read_fd(), short(POLLIN | (writing ? POLLOUT : 0)), 0};
        }
        ::poll(fds.data(), fds.size(), 50);
        for (std::size_t i = 0; i < readers.size(); ++i) {
            readers[i].read();
            ended = ended || readers[i].ended;
        }
        if (const auto rss = resident_bytes(mcpd)) peak_rss = std::max(peak_rss, *rss);
    }
    const auto report = [&] {
        std::string text;
        for (const FloodReader& r : readers) {
            text += r.session->label() + ": " + std::to_string(r.flood_seen) + " of the flood (" +
                    std::to_string(r.flood_out_of_order) + " out of order), " +
                    std::to_string(r.echo_ok) + " of " + std::to_string(r.echo_sent) +
                    " echo calls answered" + (r.ended ? ", ENDED" : "") + "\n";
            for (const std::string& p : r.problems) text += "  unexpected: " + p + "\n";
        }
        return text;
    };
    INFO(report());
    REQUIRE(finished());
    CHECK(readers[0].flood_result == "flooded " + std::to_string(kFloodCount));
    for (const FloodReader& r : readers) {
        CHECK(r.problems.empty());
        CHECK(r.flood_out_of_order == 0);
        CHECK(r.echo_sent > 1);  // replies kept coming during the flood
        CHECK_FALSE(r.ended);
    }

    wait_until("mcpd logs that the stalled session stopped reading", 10s, [&] {
        return env.daemon().log().find("the client stopped reading") != std::string::npos;
    });
    CHECK(stalled.wait_closed(10s));
    const json listing = json::parse(env.ctl({"--json", "sessions"}).out);
    CHECK(listing["sessions"].size() == readers.size());

    // Three sessions' queues at most, plus what is in flight between the pipes: a few times
    // the queue limit over idle, never anything like the 56 MB that went through.
    const std::size_t bound = idle_rss + 6 * kQueueLimit;
    WARN("mcpd RSS: idle " << idle_rss / 1024 << " KiB, peak during the flood " << peak_rss / 1024
                           << " KiB (bound " << bound / 1024 << " KiB); "
                           << readers[0].echo_sent + readers[1].echo_sent
                           << " echo calls answered during the flood");
    CHECK(peak_rss <= bound);
    CHECK(env.server_pid("demo") == server);
    CHECK_FALSE(env.daemon().poll_exit());
    WARN("the flood test took " << ms_since(started) << " ms");
}
