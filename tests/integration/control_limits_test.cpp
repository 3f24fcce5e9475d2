// Denial of service on the control socket: a refused peer is answered and closed at once,
// each user's connections are capped, idle connections time out (and connections that wait
// for a reason do not), and the protocol version is compared exactly. Root's `mcpctl status`
// must answer promptly through all of it, even under a low descriptor limit.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "connection_flood.h"
#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"
#include "raw_client.h"

using namespace integration;
using nlohmann::json;

namespace {

// mcpd's limits (daemon/control/connection_limits.h, daemon/control/control_connection.h).
constexpr int kMaxConnectionsPerUser = 64;
constexpr Duration kIdleTimeout = 10s;

// "Promptly": far below any client timeout, far above a loaded machine's scheduling noise.
constexpr Duration kPrompt = 3s;

RunResult ctl_as_within_30s(const OtherUser& user, const TestEnv& env,
                            const std::vector<std::string>& args) {
    std::vector<std::string> argv{bin("mcpctl"), "--socket", env.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(user.command(argv), 30s);
}

// Root's `mcpctl status`, timed.
RunResult timed_status(const TestEnv& env, long long& took_ms) {
    const auto start = Clock::now();
    RunResult result = env.ctl({"status"}, 30s);
    took_ms = ms_since(start);
    return result;
}

// The error code of a reply line, "" when it is not an error reply.
std::string error_code(const std::optional<std::string>& line) {
    if (!line) return "";
    const json reply = json::parse(*line, nullptr, false);
    if (reply.is_discarded() || !reply.is_object() || reply.value("ok", true)) return "";
    return reply["error"].value("code", "");
}

}  // namespace

TEST_CASE("a flood of connections from a denied user is closed at once and never locks root out",
          "[dos][socket]") {
    const OtherUser attacker;
    TestEnv env("dos-denied");
    env.write_registry(kOpenSocket + server_toml("demo"));
    open_directory(env.dir());
    // systemd's default: the 1,138 idle connections took mcpd past it.
    env.limit_daemon_fds(1024);
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("demo", "running");
    const std::size_t fds_before = open_fd_count(daemon.pid()).value_or(0);

    constexpr int kConnections = 1200;
    ConnectionFlood flood(env.socket(), attacker, kConnections);
    INFO("connection error: " << flood.connect_error());
    WARN("uid " << attacker.uid() << " opened " << flood.connected() << " of " << kConnections
                << " connections in " << flood.connect_ms() << " ms");
    // mcpd kept accepting throughout: none waited on a full descriptor table.
    CHECK(flood.connected() == kConnections);

    // The attacker still holds its ends; mcpd's are closed already.
    const bool released =
        poll_until(5s, [&] { return open_fd_count(daemon.pid()).value_or(0) <= fds_before + 2; });
    INFO("mcpd holds " << open_fd_count(daemon.pid()).value_or(0) << " descriptors, " << fds_before
                       << " before the flood");
    CHECK(released);
    long long status_ms = 0;
    const RunResult status = timed_status(env, status_ms);
    WARN("root's mcpctl status answered in " << status_ms << " ms while uid " << attacker.uid()
                                             << " held " << flood.connected() << " connections");
    INFO(status.describe());
    CHECK(status.exit_code == 0);
    CHECK(status.out.find("demo") != std::string::npos);
    CHECK(Duration(status_ms) < kPrompt);

    const ConnectionFlood::Check seen = flood.check(5s);
    WARN("the attacker's connections: " << seen.describe());
    CHECK(seen.closed == flood.connected());
    CHECK(seen.answered("denied") == flood.connected());
    // Logged (how many lines, the log's own rate limit decides).
    CHECK(daemon.log().find("refused a control connection from pid") != std::string::npos);
    CHECK(daemon.log().find("uid " + attacker.id() + ": not root") != std::string::npos);
}

TEST_CASE("a denied mcpctl is told why", "[dos][socket]") {
    const OtherUser stranger;
    TestEnv env("dos-denied-ctl");
    env.write_registry(kOpenSocket + server_toml("demo"));
    open_directory(env.dir());
    env.start_daemon();
    // mcpd answers before reading the request and closes: mcpctl's send may then fail, yet
    // the answer is there to read. Several runs, because that is a race.
    const std::string sentence =
        "permission denied: uid " + stranger.id() + " may not use this mcpd";
    int told = 0;
    std::string last;
    for (int run = 0; run < 20; ++run) {
        const RunResult refused = ctl_as_within_30s(stranger, env, {"status"});
        if (refused.exit_code == 1 && refused.err.find(sentence) != std::string::npos)
            ++told;
        else
            last = refused.describe();
    }
    INFO("a run that was not told why: " << last);
    CHECK(told == 20);
}

TEST_CASE("each user's connections are capped and idle ones time out", "[dos][socket]") {
    const OtherUser user;
    TestEnv env("dos-cap");
    env.write_registry(kOpenSocket +
                       server_toml("demo", {}, {{"allow_users", "[\"" + user.id() + "\"]"}}));
    open_directory(env.dir());
    env.limit_daemon_fds(1024);
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("demo", "running");

    constexpr int kConnections = 200;
    ConnectionFlood flood(env.socket(), user, kConnections);
    INFO("connection error: " << flood.connect_error());
    REQUIRE(flood.connected() == kConnections);
    const auto flooded_at = Clock::now();

    // The first 64 are held (idle, waiting for a request); the rest are refused at once.
    const ConnectionFlood::Check early = flood.check(2s);
    WARN("after 2 s: " << early.describe());
    CHECK(early.open == kMaxConnectionsPerUser);
    CHECK(early.answered("limit") == kConnections - kMaxConnectionsPerUser);
    CHECK(early.closed == kConnections - kMaxConnectionsPerUser);

    long long status_ms = 0;
    const RunResult status = timed_status(env, status_ms);
    WARN("root's mcpctl status answered in " << status_ms << " ms while uid " << user.uid()
                                             << " held " << kMaxConnectionsPerUser
                                             << " connections");
    INFO(status.describe());
    CHECK(status.exit_code == 0);
    CHECK(Duration(status_ms) < kPrompt);

    // One more connection of that user is refused, saying which limit.
    ConnectionFlood one_more(env.socket(), user, 1);
    REQUIRE(one_more.connected() == 1);
    CHECK(one_more.check(5s).answered("limit") == 1);
    CHECK(daemon.log().find("too many connections: uid " + user.id() + " already holds 64") !=
          std::string::npos);

    // The held ones never sent a request: they are closed after the idle timeout.
    const long long late_start_ms = ms_since(flooded_at);
    const ConnectionFlood::Check late = flood.check(kIdleTimeout + 5s);
    const long long closed_after = late_start_ms + late.all_closed_ms;
    WARN("the idle connections: " << late.describe() << " (the last " << closed_after
                                  << " ms after they were opened)");
    CHECK(late.open == 0);
    CHECK(Duration(closed_after) < kIdleTimeout + 3s);
    CHECK(late.answered("timeout") == kMaxConnectionsPerUser);
    CHECK(count_of(daemon.log(), "no request within 10s") ==
          static_cast<std::size_t>(kMaxConnectionsPerUser));  // under the log's rate limit

    // Its places are back: the user gets in again.
    const RunResult again = ctl_as_within_30s(user, env, {"--json", "status"});
    INFO(again.describe());
    CHECK(again.exit_code == 0);
}

TEST_CASE("only idle control connections time out", "[control][idle]") {
    TestEnv env("idle-timeout");
    env.write_registry(server_toml("demo") +
                       server_toml("slow", {"-c", "sleep 12; exec mcpd-demo-server"},
                                   {{"autostart", "false"}, {"start_timeout", "\"30s\""}},
                                   "/bin/sh"));
    env.start_daemon();
    env.wait_state("demo", "running");

    // Waiting legitimately: a followed log, a session on the socket, an `mcpctl connect`
    // (passed descriptors and its link), and a reply deferred by --wait.
    BackgroundProcess follow({bin("mcpctl"), "--socket", env.socket(), "logs", "-f", "demo"});
    McpSession on_socket(env.socket(), "demo");
    on_socket.initialize("socket-agent");
    PipedProcess connect({bin("mcpctl"), "--socket", env.socket(), "connect", "demo"},
                         env.path("connect.err"));
    connect.session().initialize("piped-agent");
    BackgroundProcess waiting({"/bin/sh", "-c",
                               bin("mcpctl") + " --socket " + env.socket() +
                                   " start --wait slow >/dev/null; echo \"wait exit $?\""});

    // Idle: one that sends nothing, one that sends half a request and stops.
    const auto opened = Clock::now();
    RawClient silent(env.socket());
    RawClient partial(env.socket());
    REQUIRE(partial.send("{\"protocol\": 1, \"command\": ") > 0);

    const std::optional<std::string> silent_answer = silent.read_line(kIdleTimeout + 5s);
    const long long silent_ms = ms_since(opened);
    WARN("a silent connection was answered after "
         << silent_ms << " ms: " << silent_answer.value_or("(nothing)"));
    CHECK(error_code(silent_answer) == "timeout");
    CHECK(silent.wait_closed(2s));
    CHECK(Duration(silent_ms) >= kIdleTimeout - 1s);
    CHECK(Duration(silent_ms) < kIdleTimeout + 3s);
    CHECK(error_code(partial.read_line(3s)) == "timeout");
    CHECK(partial.wait_closed(2s));
    CHECK(env.daemon().log().find("no request within 10s") != std::string::npos);

    // The deferred reply came, after longer than the idle timeout.
    INFO(waiting.output());
    CHECK(waiting.wait_for_output("wait exit 0", 25s));
    CHECK(Duration(ms_since(opened)) > kIdleTimeout);

    // The sessions still work, and the followed log still flows.
    const McpMessage echo =
        on_socket.wait_response(on_socket.call_tool("echo", {{"text", "still here"}}));
    CHECK(echo.tool_text() == "still here");
    McpSession& piped = connect.session();
    CHECK(piped.wait_response(piped.call_tool("echo", {{"text", "piped too"}})).tool_text() ==
          "piped too");
    const std::size_t banners = count_of(follow.output(), "ready");
    REQUIRE(env.ctl({"restart", "--wait", "demo"}).exit_code == 0);
    INFO(follow.output());
    CHECK(follow.wait_for_output("ready", 10s, static_cast<int>(banners) + 1));
}

TEST_CASE("the control protocol version must be exactly the integer 1", "[control]") {
    TestEnv env("protocol-exact");
    env.write_registry(server_toml("demo"));
    env.start_daemon();

    for (const std::string version :
         {"4294967297", "-4294967295", "1.0", "\"1\"", "18446744073709551617", "true", "null"}) {
        INFO("protocol " << version);
        RawClient client(env.socket());
        client.send("{\"protocol\": " + version + ", \"command\": \"version\"}\n");
        const std::optional<std::string> reply = client.read_line(5s);
        REQUIRE(reply);
        CHECK(error_code(reply) == "protocol");
        if (version.find_first_not_of("-0123456789") == std::string::npos &&
            version.size() < 12)  // written back as it came
            CHECK(reply->find("the client sent " + version) != std::string::npos);
        CHECK(client.wait_closed(5s));
    }
    RawClient exact(env.socket());
    exact.send("{\"protocol\": 1, \"command\": \"version\"}\n");
    const std::optional<std::string> reply = exact.read_line(5s);
    REQUIRE(reply);
    CHECK(json::parse(*reply).value("ok", false));
}

TEST_CASE("mcpd raises its soft descriptor limit to the hard limit", "[dos]") {
    TestEnv env("fd-limit");
    env.write_registry(server_toml("demo"));
    // A soft limit under the hard one, as systemd and most shells give.
    BackgroundProcess daemon({"/bin/sh", "-c",
                              "ulimit -Sn 256 && exec " + bin("mcpd") +
                                  " --log-level debug --config " + env.registry() + " --socket " +
                                  env.socket() + " 2>&1"});
    wait_until("mcpd answers", 20s, [&] { return env.ctl({"version"}, 5s).exit_code == 0; });

    // The soft and hard "Max open files" of process `pid`.
    const auto open_files = [](pid_t pid) {
        std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
        std::string line, soft, hard;
        while (std::getline(limits, line)) {
            if (line.rfind("Max open files", 0) != 0) continue;
            std::istringstream fields(line.substr(std::string("Max open files").size()));
            fields >> soft >> hard;
        }
        return std::pair{soft, hard};
    };
    const auto [soft, hard] = open_files(daemon.pid());
    INFO(daemon.output());
    REQUIRE_FALSE(soft.empty());
    CHECK(soft != "256");
    CHECK(soft == hard);
    CHECK(daemon.output().find("descriptor limit raised from 256 to " + hard) != std::string::npos);
    // The servers it starts get the limit mcpd was started with, not its raised one.
    env.wait_state("demo", "running");
    const auto [server_soft, server_hard] = open_files(*env.server_pid("demo"));
    CHECK(server_soft == "256");
    CHECK(server_hard == hard);
}
