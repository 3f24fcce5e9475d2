// mcpd's own user (root here: the tests run mcpd as root) is bounded too: its connections are
// capped at max_owner_connections, its idle control connections time out like anybody's, and
// a full descriptor table makes the oldest idle ones go; through all of it `mcpctl status`
// answers at once and a working session is left alone.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "connection_flood.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;

namespace {

// Short, so the test takes seconds: the registry sets it.
constexpr Duration kIdleTimeout = 2s;
constexpr Duration kPromptly = 1s;

std::string owner_registry(int max_owner_connections) {
    return "[daemon]\ncontrol_idle_timeout = \"2s\"\nmax_owner_connections = " +
           std::to_string(max_owner_connections) + "\n\n" + server_toml("demo");
}

// mcpctl status, timed; it must succeed and list demo.
void check_status_is_prompt(const TestEnv& env, const std::string& while_what) {
    const auto start = Clock::now();
    const RunResult status = env.ctl({"status"}, 30s);
    const long long took_ms = ms_since(start);
    WARN("mcpctl status answered in " << took_ms << " ms while " << while_what);
    INFO(status.describe());
    CHECK(status.exit_code == 0);
    CHECK(status.out.find("demo") != std::string::npos);
    CHECK(Duration(took_ms) < kPromptly);
}

void check_session_works(McpSession& session, const std::string& text) {
    const McpMessage echo = session.wait_response(session.call_tool("echo", {{"text", text}}));
    CHECK(echo.tool_text() == text);
}

}  // namespace

TEST_CASE("the owner's connections are capped and its idle ones time out", "[dos][socket]") {
    constexpr int kCap = 100;
    TestEnv env("owner-cap");
    env.write_registry(owner_registry(kCap));
    // systemd's default: 1,200 idle connections of the owner used to fill it.
    env.limit_daemon_fds(1024);
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("demo", "running");
    McpSession session(env.socket(), "demo");
    session.initialize("owner-agent");
    check_session_works(session, "before");
    const std::size_t fds_before = open_fd_count(daemon.pid()).value_or(0);

    constexpr int kConnections = 1200;
    ConnectionFlood flood(env.socket(), ::getuid(), ::getgid(), kConnections);
    INFO("connection error: " << flood.connect_error());
    WARN("the owner opened " << flood.connected() << " of " << kConnections << " connections in "
                             << flood.connect_ms() << " ms");
    // mcpd accepted every one: none waited on a full descriptor table.
    CHECK(flood.connected() == kConnections);
    const auto flooded_at = Clock::now();

    // At most the cap is held; the older ones made way, told why.
    const ConnectionFlood::Check early = flood.check(200ms);
    WARN("right after the flood: " << early.describe());
    CHECK(early.open <= kCap);
    CHECK(early.answered("limit") == early.closed);
    check_status_is_prompt(env,
                           "the owner held " + std::to_string(early.open) + " idle connections");
    check_session_works(session, "during");
    // Said once, naming the uid, however many made way.
    const std::string log = daemon.log();
    CHECK(count_of(log, "closing idle control connections of uid " + std::to_string(::getuid()) +
                            ", the longest idle first, to make way") == 1);
    CHECK(log.find("the most max_owner_connections lets it hold") != std::string::npos);

    // The held ones never sent a request: the idle timeout closes them.
    const long long late_start_ms = ms_since(flooded_at);
    const ConnectionFlood::Check late = flood.check(kIdleTimeout + 3s);
    const long long closed_after = late_start_ms + late.all_closed_ms;
    WARN("the idle connections: " << late.describe() << " (the last " << closed_after
                                  << " ms after the flood)");
    CHECK(late.open == 0);
    CHECK(late.all_closed_ms >= 0);
    CHECK(Duration(closed_after) < kIdleTimeout + 2s);
    // Each was told why: made way (mcpctl status took one more place), or timed out.
    CHECK(late.answered("timeout") > 0);
    CHECK(late.answered("timeout") + late.answered("limit") == kConnections);
    CHECK(daemon.log().find("no request within 2s") != std::string::npos);

    // mcpd holds what it held before the flood, and the session still works.
    const bool released = poll_until(
        5s, [&] { return open_fd_count(daemon.pid()).value_or(fds_before + 100) <= fds_before; });
    INFO("mcpd holds " << open_fd_count(daemon.pid()).value_or(0) << " descriptors, " << fds_before
                       << " before the flood");
    CHECK(released);
    check_session_works(session, "after");
}

TEST_CASE("a full descriptor table makes the oldest idle connections go, so the owner gets in",
          "[dos][socket]") {
    TestEnv env("owner-reserve");
    // A cap above the descriptor limit: the table fills before the cap is reached.
    env.write_registry(owner_registry(5000));
    env.limit_daemon_fds(128);
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("demo", "running");
    McpSession session(env.socket(), "demo");
    session.initialize("owner-agent");
    const std::size_t fds_before = open_fd_count(daemon.pid()).value_or(0);

    constexpr int kConnections = 400;
    ConnectionFlood flood(env.socket(), ::getuid(), ::getgid(), kConnections);
    INFO("connection error: " << flood.connect_error());
    WARN("the owner opened " << flood.connected() << " of " << kConnections << " connections in "
                             << flood.connect_ms() << " ms");
    CHECK(flood.connected() == kConnections);

    const ConnectionFlood::Check early = flood.check(200ms);
    WARN("right after the flood: " << early.describe());
    CHECK(early.open < 128);
    CHECK(early.answered("limit") == early.closed);
    check_status_is_prompt(env, "mcpd's descriptor table was full of idle connections");
    check_session_works(session, "during");
    const std::string log = daemon.log();
    CHECK(count_of(log, "closing idle control connections of uid " + std::to_string(::getuid()) +
                            ", the longest idle first, to make way: mcpd's descriptor table is "
                            "full (128 descriptors)") == 1);

    const ConnectionFlood::Check late = flood.check(kIdleTimeout + 3s);
    WARN("the idle connections: " << late.describe());
    CHECK(late.open == 0);
    const bool released = poll_until(
        5s, [&] { return open_fd_count(daemon.pid()).value_or(fds_before + 100) <= fds_before; });
    INFO("mcpd holds " << open_fd_count(daemon.pid()).value_or(0) << " descriptors, " << fds_before
                       << " before the flood");
    CHECK(released);
    check_session_works(session, "after");
}
