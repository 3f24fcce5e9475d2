// Fault: clients that come and go. 2,000 sessions attach and vanish (some mid-request, some
// mid-line) and mcpd's descriptors and memory return to where they were; under `ulimit -n
// 256` a burst of 500 connections runs mcpd out of descriptors: it backs off without
// spinning, keeps serving the session it has, and recovers once they are gone.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include "harness.h"
#include "mcp_session.h"
#include "raw_client.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr int kWave = 50;  // sessions open at the same time

// A Unix-socket connection attempt that never blocks: the fd, or minus errno.
// A `logs -f demo` request: a connection that sent it waits for log lines, never idle.
constexpr std::string_view kFollowRequest =
    "{\"protocol\": 1, \"command\": \"logs\", \"server\": \"demo\", \"follow\": true}\n";

int try_connect(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -errno;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        ::close(fd);
        return -err;
    }
    return fd;
}

// Write the start of a line (no newline) to the session.
void send_partial(McpSession& session, std::string_view bytes) {
    REQUIRE(::send(session.write_fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
}

// One wave of sessions that attach, do a little, and vanish without saying goodbye.
void churn_wave(const TestEnv& env, int first) {
    std::vector<std::unique_ptr<McpSession>> wave;
    std::vector<std::unique_ptr<RawClient>> raw;
    for (int i = first; i < first + kWave; ++i) {
        if (i % 7 == 6) {
            // Not a session at all: a control connection that leaves mid-request.
            raw.push_back(std::make_unique<RawClient>(env.socket()));
            raw.back()->send(R"({"protocol":1,"command":"sta)");
            continue;
        }
        auto session = std::make_unique<McpSession>(env.socket(), "demo");
        const std::string name = "churn-" + std::to_string(i);
        switch (i % 7) {
            case 0:  // attached, never a word
                break;
            case 1:  // initialized, then gone
                session->initialize(name);
                break;
            case 2:  // gone with a call in flight at the server
                session->initialize(name);
                session->call_tool("slow", {{"steps", 100}, {"interval_ms", 50}},
                                   {{"progressToken", name}});
                break;
            case 3:  // gone after a complete exchange
                session->initialize(name);
                session->wait_response(session->call_tool("echo", {{"text", name}}));
                break;
            case 4:  // gone halfway through a line
                session->initialize(name);
                send_partial(*session, R"({"jsonrpc":"2.0","id":1,"method":"tools/ca)");
                break;
            case 5:  // gone with calls sent before initialize finished
                session->request("initialize",
                                 {{"protocolVersion", "2025-06-18"},
                                  {"capabilities", json::object()},
                                  {"clientInfo", {{"name", name}, {"version", "1"}}}});
                session->call_tool("echo", {{"text", name}});
                break;
        }
        wave.push_back(std::move(session));
    }
    // Every one of them vanishes at once (their descriptors close).
}

// How many sessions `mcpctl sessions` lists.
std::size_t session_count(const TestEnv& env) {
    const RunResult listed = env.ctl({"--json", "sessions"});
    INFO(listed.describe());
    REQUIRE(listed.exit_code == 0);
    return json::parse(listed.out)["sessions"].size();
}

// Wait until mcpd lists `sessions` sessions, then until its descriptor count stops moving.
std::size_t settled_fds(const TestEnv& env, pid_t mcpd, std::size_t sessions) {
    wait_until("the vanished sessions are gone", 30s,
               [&] { return session_count(env) == sessions; });
    std::size_t last = *open_fd_count(mcpd);
    for (int stable = 0; stable < 5;) {
        std::this_thread::sleep_for(50ms);
        const std::size_t now = *open_fd_count(mcpd);
        stable = now == last ? stable + 1 : 0;
        last = now;
    }
    return last;
}

}  // namespace

TEST_CASE(
    "2000 sessions that attach and vanish leave mcpd's descriptors and memory as they "
    "were",
    "[fault]") {
    constexpr int kSessions = 2000;
    const auto started = Clock::now();
    TestEnv env("fault-churn");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t mcpd = env.daemon_pid();
    const pid_t server = *env.server_pid("demo");
    McpSession steady(env.socket(), "demo");
    steady.initialize("steady");

    // Warm up with the same mix, so the baseline includes what the allocator keeps anyway.
    for (int i = 0; i < 4 * kWave; i += kWave) churn_wave(env, i);
    const std::size_t base_fds = settled_fds(env, mcpd, 1);
    const std::size_t base_rss = *resident_bytes(mcpd);

    // Measured half-way as well: the allocator may keep a high-water mark it reached once (a
    // burst of waves on a loaded machine), while a leak grows with every session, in the second
    // half as in the first.
    std::size_t mid_rss = 0;
    for (int i = 0; i < kSessions; i += kWave) {
        churn_wave(env, i);
        if (i + kWave == kSessions / 2) mid_rss = *resident_bytes(mcpd);
        if (i % 500 == 0) {
            INFO("after " << i << " sessions");
            CHECK(
                steady.wait_response(steady.call_tool("echo", {{"text", "steady"}})).tool_text() ==
                "steady");
        }
    }
    // `steady` is still attached; the churned ones are all gone.
    wait_until("only the steady session is left", 30s, [&] { return session_count(env) == 1; });
    std::size_t fds = 0;
    const bool fds_back = poll_until(20s, [&] {
        fds = *open_fd_count(mcpd);
        return fds == base_fds;
    });
    const std::size_t rss = *resident_bytes(mcpd);
    // At most 2 KiB per session: 4 MiB over all of them, or 2 MiB over the second half alone
    // (what a one-time high-water mark of the allocator cannot explain), and never past twice
    // that.
    const std::size_t rss_bound = std::max(base_rss + base_rss / 10, base_rss + 4 * 1024 * 1024);
    const std::size_t half_bound = mid_rss + 2 * 1024 * 1024;
    WARN("mcpd after " << kSessions << " sessions came and went: " << fds
                       << " descriptors (before: " << base_fds << "), RSS " << rss / 1024
                       << " KiB (before: " << base_rss / 1024 << " KiB, half-way " << mid_rss / 1024
                       << " KiB, bound " << rss_bound / 1024 << " KiB)");
    CHECK(fds_back);
    REQUIRE(mid_rss > 0);
    CHECK((rss <= rss_bound || rss <= half_bound));
    CHECK(rss <= base_rss + 2 * (rss_bound - base_rss));

    // The calls the vanished sessions left at the server were cancelled; it serves on.
    CHECK(steady.wait_response(steady.call_tool("echo", {{"text", "still here"}})).tool_text() ==
          "still here");
    const json demo = env.server("demo");
    CHECK(demo["pid"] == server);
    CHECK(demo["sessions"] == 1);
    CHECK_FALSE(env.daemon().poll_exit());
    WARN("the churn test took " << ms_since(started) << " ms");
}

TEST_CASE("out of descriptors (ulimit -n 256) mcpd backs off and keeps serving and recovers",
          "[fault]") {
    constexpr int kAttempts = 500;
    const auto started = Clock::now();
    TestEnv env("fault-emfile");
    env.limit_daemon_fds(256);
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t mcpd = env.daemon_pid();
    const pid_t demo_pid = *env.server_pid("demo");
    McpSession steady(env.socket(), "demo");
    steady.initialize("steady");
    const std::size_t base_fds = *open_fd_count(mcpd);

    // While the listen backlog is full an attempt waits for mcpd to accept more, until mcpd
    // reports that it ran out of descriptors: busy or kept waiting by a loaded machine, it
    // accepts until then. (Guessing that from a few attempts refused in a row failed when mcpd
    // was held up for a third of a second: it never ran out.) Once it has, the backlog stays
    // full and the rest are refused (EAGAIN) at once.
    const auto ran_out = [&] {
        return env.daemon().log().find("cannot accept connections: Too many open files") !=
               std::string::npos;
    };
    std::vector<int> held;
    int refused = 0;
    bool out_of_fds = false;
    const auto give_up = Clock::now() + 30s;
    for (int i = 0; i < kAttempts; ++i) {
        int fd = try_connect(env.socket());
        while (fd == -EAGAIN && !out_of_fds && Clock::now() < give_up) {
            std::this_thread::sleep_for(5ms);
            out_of_fds = ran_out();
            fd = try_connect(env.socket());
        }
        if (fd >= 0) {
            // A follower: mcpd closes idle connections of its owner to make room, not these.
            REQUIRE(::send(fd, kFollowRequest.data(), kFollowRequest.size(), MSG_NOSIGNAL) ==
                    static_cast<ssize_t>(kFollowRequest.size()));
            held.push_back(fd);
        } else {
            ++refused;
        }
    }
    wait_until("mcpd reports that it ran out of descriptors", 20s, ran_out);
    REQUIRE(*open_fd_count(mcpd) <= 256);

    // Backing off, not spinning: over two seconds at the limit mcpd uses little CPU.
    const long long cpu_before = *cpu_time_ms(mcpd);
    const auto watched = Clock::now();
    std::this_thread::sleep_for(2s);
    const long long cpu_used = *cpu_time_ms(mcpd) - cpu_before;
    const long long wall = ms_since(watched);
    WARN(held.size() << " connections held, " << refused << " refused; mcpd used " << cpu_used
                     << " ms of CPU in " << wall << " ms at the descriptor limit");
    CHECK(cpu_used < wall / 2);

    // The session it already had is served all along.
    CHECK(steady.wait_response(steady.call_tool("echo", {{"text", "at the limit"}})).tool_text() ==
          "at the limit");

    // The server dies now: while descriptors are out its restarts fail (no pipes), which is
    // the machine's state, not the server's, and must not use up start_limit (5 in 60 s).
    ::kill(demo_pid, SIGKILL);
    wait_until("a restart that fails for want of descriptors", 20s, [&] {
        const std::string log = env.daemon().log();
        return count_of(log, "Too many open files") >
               count_of(log, "cannot accept connections: Too many open files");
    });
    std::this_thread::sleep_for(4s);  // backoff 100 ms doubling: six failed starts and more
    // (mcpctl cannot get in while descriptors are out: the daemon log tells the state.)
    const std::string during = env.daemon().log();
    INFO(during);
    CHECK(count_of(during, "[demo] backoff -> failed") == 0);
    CHECK(count_of(during, "-> failed") == 0);

    for (int fd : held) ::close(fd);
    held.clear();
    const auto released = Clock::now();
    wait_until("a fresh mcpctl status succeeds", 30s,
               [&] { return env.ctl({"status"}, 10s).exit_code == 0; });
    WARN("mcpctl status answered " << ms_since(released) << " ms after the connections closed");
    std::size_t fds = 0;
    const bool fds_back = poll_until(20s, [&] {
        fds = *open_fd_count(mcpd);
        return fds == base_fds;
    });
    INFO("descriptors: " << fds << ", before the burst: " << base_fds);
    CHECK(fds_back);
    CHECK_FALSE(env.daemon().poll_exit());
    // Running again once descriptors came back, without `mcpctl start`.
    env.wait_state("demo", "running", 30s);
    CHECK(steady.wait_response(steady.call_tool("echo", {{"text", "after"}})).tool_text() ==
          "after");
    // A pause per attempt, not a storm of them.
    const std::size_t pauses = count_of(env.daemon().log(), "pausing for 1s");
    INFO("pauses logged: " << pauses);
    CHECK(pauses <= static_cast<std::size_t>(ms_since(started) / 1000 + 2));
    WARN("the descriptor-limit test took " << ms_since(started) << " ms");
}
