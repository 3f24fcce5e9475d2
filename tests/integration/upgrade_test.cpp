// An upgrade in place (docs/UPGRADE.md), as far as it is built: the binary that is to replace
// mcpd reads the state it would be handed from a descriptor (`mcpd --check-state FD`) and
// acknowledges it with its digest, or refuses it with a sentence, so a state the new binary
// cannot take is caught before any exec; `mcpctl upgrade` then execs it under the same pid,
// which takes over the control socket and every server's state, or refuses, saying why, and
// mcpd carries on.
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include <algorithm>

#include "common/sha256.h"
#include "common/state_file.h"
#include "curl_client.h"
#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"
#include "proc_fs.h"

using namespace integration;
using nlohmann::json;

namespace {

json supervisor_state(const std::string& state) {
    return {{"state", state},          {"state_age_ms", 1500},
            {"wanted_up", state != "stopped"}, {"next_start_in_ms", state == "backoff" ? 800 : 0},
            {"restarts", 2},           {"restart_reasons", {{"exit 1", 2}}},
            {"restart_reason", "exit 1"}, {"consecutive_failures", 1},
            {"transient_failures", 0}, {"failure_ages_ms", {900}},
            {"error", ""},             {"stop_reason", "none"},
            {"era_modern", false},     {"last_exit", nullptr},
            {"pid", -1},               {"running_ms", 0}};
}

json state_body(const std::string& server_state) {
    return {{"mcpd_version", "0.1.0"}, {"pid", 4242},       {"config", "/etc/mcpd/mcpd.toml"},
            {"socket", "/run/mcpd/mcpd.sock"}, {"listening", "/run/mcpd/mcpd.sock"},
            {"socket_activated", false}, {"control_fd", 5}, {"keeper_pid", 99},
            {"keeper_fd", 6}, {"http_listeners", {{{"address", "unix:/run/mcpd/mcpd-http.sock"}, {"fd", 7}}}},
            {"metrics_listener", nullptr}, {"uptime_ms", 60000}, {"upgrades", 0},
            {"servers",
             {{{"name", "demo"}, {"supervisor", supervisor_state(server_state)}, {"process", nullptr}}}}};
}

// How many descriptors `pid` has open.
std::size_t open_descriptors(pid_t pid) {
    std::size_t count = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
        ++count;
    return count;
}

// The same once mcpd has let go of the connections of clients that just left (it sees their
// end a moment after they exit): the count it settles at.
std::size_t settled_descriptors(pid_t pid) {
    std::size_t last = open_descriptors(pid);
    for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(20ms);
        const std::size_t now = open_descriptors(pid);
        if (now == last) return now;
        last = now;
    }
    return last;
}

// The sockets `pid` holds open ("socket:[INODE]"), sorted.
std::vector<std::string> open_sockets(pid_t pid) {
    std::vector<std::string> sockets;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
        std::error_code error;
        const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
        if (target.starts_with("socket:")) sockets.push_back(target);
    }
    std::sort(sockets.begin(), sockets.end());
    return sockets;
}

// A server that failed (restart = "never"), one waiting out a long backoff, one stopped.
std::string three_servers_without_processes() {
    return server_toml("bad", {}, {{"restart", "\"never\""}}, "/bin/false") +
           server_toml("flaky", {}, {{"restart", "\"always\""}, {"restart_delay", "\"1h\""}},
                       "/bin/false") +
           server_toml("later", {}, {{"autostart", "false"}});
}

void start_without_processes(TestEnv& env) {
    env.write_registry(three_servers_without_processes());
    env.start_daemon();
    env.wait_state("bad", "failed");
    env.wait_state("flaky", "backoff");
}

// `mcpctl upgrade ARGS` refused with a sentence holding `why`; mcpd still the same and whole.
void expect_refused(TestEnv& env, const std::vector<std::string>& args, const std::string& why) {
    const pid_t pid = env.daemon_pid();
    std::vector<std::string> command = {"upgrade"};
    command.insert(command.end(), args.begin(), args.end());
    const RunResult refused = env.ctl(command);
    INFO(refused.describe());
    CHECK(refused.exit_code == 1);
    CHECK(refused.err.find(why) != std::string::npos);
    const nlohmann::json status = env.status_json();
    CHECK(status["daemon"]["pid"] == pid);
    CHECK(status["daemon"]["upgrades"] == 0);
}

// `mcpd --check-state 3` with `text` on descriptor 3.
RunResult check_state(const TestEnv& env, const std::string& text) {
    const std::string file = env.path("state");
    std::ofstream(file, std::ios::binary | std::ios::trunc) << text;
    return run_process({"/bin/sh", "-c", "exec \"$0\" --check-state 3 3<\"$1\"", bin("mcpd"), file});
}

}  // namespace

TEST_CASE("mcpd --check-state acknowledges a state it can take with the state's digest",
          "[upgrade]") {
    TestEnv env("check-state-good");
    // Its own version, and the one before (which carries no sessions).
    for (const int version : {1, 2}) {
        for (const std::string server_state : {"stopped", "backoff", "failed"}) {
            const std::string text = mcpd::state_file::encode(state_body(server_state), version);
            const RunResult checked = check_state(env, text);
            INFO(server_state << ", version " << version << ": " << checked.describe());
            CHECK(checked.exit_code == 0);
            CHECK(checked.out == "mcpd-state ok " + std::to_string(version) + " " +
                                     mcpd::sha256_hex(text) + "\n");
        }
    }
}

TEST_CASE("mcpd --check-state refuses a truncated, corrupt, foreign or unsupported state, saying why",
          "[upgrade]") {
    TestEnv env("check-state-bad");
    const std::string good = mcpd::state_file::encode(state_body("stopped"));
    const struct {
        std::string text;
        std::string why;
    } cases[] = {
        {good.substr(0, good.size() / 2), "truncated"},
        {good.substr(0, good.size() - 2) + "x}", "corrupt"},
        {"{}", "not an mcpd state"},
        {mcpd::state_file::encode(state_body("stopped"), 4), "of version 4"},
        {mcpd::state_file::encode(state_body("running")), "server 'demo'"},
        {mcpd::state_file::encode({{"pid", 1}}), "cannot be taken"},
    };
    for (const auto& bad : cases) {
        const RunResult checked = check_state(env, bad.text);
        INFO(bad.why << ": " << checked.describe());
        CHECK(checked.exit_code == 1);
        CHECK(checked.out.empty());
        CHECK(checked.err.find(bad.why) != std::string::npos);
    }
    // A descriptor that is not open is an error too, not an empty state.
    const RunResult closed = run_process({bin("mcpd"), "--check-state", "9"});
    INFO(closed.describe());
    CHECK(closed.exit_code == 1);
    CHECK(closed.err.find("descriptor 9") != std::string::npos);
}

TEST_CASE("mcpctl upgrade replaces mcpd in place ten times: same pid and socket, every server's state kept",
          "[upgrade]") {
    TestEnv env("upgrade-in-place");
    start_without_processes(env);
    const pid_t pid = env.daemon_pid();
    const nlohmann::json before = env.status_json();
    const nlohmann::json bad = env.server("bad");
    const nlohmann::json flaky = env.server("flaky");
    const std::size_t descriptors = settled_descriptors(pid);

    for (int round = 1; round <= 10; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO("round " << round << ": " << upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(upgraded.out.find("mcpd upgraded in place to " + bin("mcpd")) != std::string::npos);
        const nlohmann::json status = env.status_json();
        CHECK(status["daemon"]["pid"] == pid);
        CHECK(status["daemon"]["upgrades"] == round);
        // Nothing leaked: what is open settles back where it was.
        CHECK(poll_until(3s, [&] { return open_descriptors(pid) == descriptors; }));
    }
    const nlohmann::json after = env.status_json();
    // The uptime runs on across the execs.
    CHECK(after["daemon"]["uptime_ms"].get<long long>() >=
          before["daemon"]["uptime_ms"].get<long long>());
    // The failed server is failed for the same reason; the backoff still waits, counted the same.
    CHECK(env.state("bad") == "failed");
    CHECK(env.server("bad")["error"] == bad["error"]);
    CHECK(env.server("bad")["last_exit"]["status"] == bad["last_exit"]["status"]);
    CHECK(env.state("flaky") == "backoff");
    CHECK(env.server("flaky")["restarts"] == flaky["restarts"]);
    CHECK(env.server("flaky")["wanted"] == "up");
    CHECK(env.server("flaky")["last_exit"]["status"] == flaky["last_exit"]["status"]);
    // Its hour of backoff runs on, neither restarted nor forgotten; its age in the state too.
    CHECK(env.server("flaky")["next_start_ms"].get<long long>() > 3'000'000);
    CHECK(env.server("flaky")["next_start_ms"].get<long long>() <=
          flaky["next_start_ms"].get<long long>());
    CHECK(env.server("flaky")["state_ms"].get<long long>() >= flaky["state_ms"].get<long long>());
    // The new process supervises as the old one did: a server starts and serves a session,
    // and the keeper still knows its process group (it is killed with mcpd, below).
    REQUIRE(env.ctl({"start", "later", "--wait"}).exit_code == 0);
    McpSession session(env.socket(), "later");
    session.initialize("after-upgrade");
    CHECK(session.wait_response(session.call_tool("echo", {{"text", "carried"}})).tool_text() ==
          "carried");
    // The mcpd log says what happened.
    CHECK(env.daemon_log().find("upgraded in place from mcpd") != std::string::npos);
    CHECK(env.daemon_log().find("(upgrade 10 of pid " + std::to_string(pid) + ")") !=
          std::string::npos);
}

TEST_CASE("mcpctl upgrade --binary runs the binary named, which a later upgrade runs again",
          "[upgrade]") {
    TestEnv env("upgrade-binary");
    start_without_processes(env);
    const std::string copy = env.path("mcpd-new");
    std::filesystem::copy_file(bin("mcpd"), copy);
    const RunResult upgraded = env.ctl({"upgrade", "--binary", copy, "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);
    CHECK(process_cmdline(env.daemon_pid()).starts_with(copy + '\0'));
    const RunResult again = env.ctl({"--json", "upgrade", "--wait"});
    INFO(again.describe());
    REQUIRE(again.exit_code == 0);
    CHECK(nlohmann::json::parse(again.out)["binary"] == copy);
    CHECK(env.status_json()["daemon"]["upgrades"] == 2);
}

TEST_CASE("mcpctl upgrade refuses what it cannot carry or run, saying why, and mcpd carries on",
          "[upgrade]") {
    TestEnv env("upgrade-refused");
    start_without_processes(env);

    SECTION("a binary that is missing, not mcpd, or that others may write") {
        expect_refused(env, {"--binary", env.path("nothing-here")}, "No such file or directory");
        expect_refused(env, {"--binary", "/bin/true"},
                       "/bin/true --check-state printed nothing");
        const std::string liar = env.path("liar");
        std::ofstream(liar) << "#!/bin/sh\necho 'mcpd-state ok 1 0000'\n";
        ::chmod(liar.c_str(), 0755);
        expect_refused(env, {"--binary", liar}, "did not acknowledge this state: mcpd-state ok 1 0000");
        const std::string failing = env.path("failing");
        std::ofstream(failing) << "#!/bin/sh\necho 'mcpd: the state is of version 9' >&2\nexit 1\n";
        ::chmod(failing.c_str(), 0755);
        expect_refused(env, {"--binary", failing},
                       "exited with status 1: mcpd: the state is of version 9");
        const std::string open_copy = env.path("mcpd-open");
        std::filesystem::copy_file(bin("mcpd"), open_copy);
        ::chmod(open_copy.c_str(), 0777);
        expect_refused(env, {"--binary", open_copy}, "may be written by others");
    }
    SECTION("a control connection waiting") {
        {
            // A start --wait of a server that keeps failing waits out its timeout.
            BackgroundProcess waiter({bin("mcpctl"), "--socket", env.socket(), "start", "flaky",
                                      "--wait", "--timeout", "3s"});
            // Refused for as long as it waits (it may take a moment to connect).
            CHECK(poll_until(10s, [&] {
                return env.ctl({"upgrade"}).err.find("1 other control connection(s) are busy") !=
                       std::string::npos;
            }));
            expect_refused(env, {}, "1 other control connection(s) are busy waiting for something");
        }
        // mcpctl makes a relative path absolute where it runs; mcpd names what it looked for.
        expect_refused(env, {"--binary", "relative/mcpd"}, "relative/mcpd: No such file or directory");
    }
    SECTION("a registry edited since mcpd read it") {
        env.write_registry(three_servers_without_processes() + server_toml("added"));
        expect_refused(env, {}, "changed since mcpd read it: run 'mcpctl reload' first");
    }
    // mcpd still upgrades once nothing stands in the way (it sees a client that left a moment
    // after it exits).
    env.write_registry(three_servers_without_processes());
    RunResult upgraded;
    CHECK(poll_until(10s, [&] {
        upgraded = env.ctl({"upgrade", "--wait"});
        return upgraded.exit_code == 0;
    }));
    INFO(upgraded.describe());
    CHECK(upgraded.exit_code == 0);
}

TEST_CASE("a running server is carried across upgrades: same pid, no new handshake, still supervised, killed with mcpd",
          "[upgrade]") {
    TestEnv env("upgrade-running");
    env.write_registry(server_toml("live", {"--stderr-banner=hello from live"}) +
                       server_toml("bad", {}, {{"restart", "\"never\""}}, "/bin/false"));
    env.start_daemon();
    env.wait_state("live", "running");
    env.wait_state("bad", "failed");
    const pid_t live = *env.server_pid("live");
    // A logs -f of it is carried too: it hears the server's next start after the upgrades.
    BackgroundProcess follower({bin("mcpctl"), "--socket", env.socket(), "logs", "-f", "live"});
    REQUIRE(follower.wait_for_output("hello from live", 10s));
    {
        McpSession session(env.socket(), "live");
        session.initialize("before-upgrade");
        CHECK(session.wait_response(session.call_tool("echo", {{"text", "before"}})).tool_text() ==
              "before");
    }
    // The session's end reaches mcpd a moment after the client closes.
    REQUIRE(poll_until(5s, [&] { return env.server("live")["sessions"] == 0; }));
    const std::size_t descriptors = settled_descriptors(env.daemon_pid());

    for (int round = 1; round <= 3; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(env.server_pid("live") == live);
        CHECK(env.state("live") == "running");
        CHECK(env.server("live")["restarts"] == 0);
        CHECK(poll_until(3s, [&] { return open_descriptors(env.daemon_pid()) == descriptors; }));
    }
    // It serves a new session at once, on the handshake it did with the first mcpd.
    McpSession session(env.socket(), "live");
    session.initialize("after-upgrade");
    CHECK(session.wait_response(session.call_tool("echo", {{"text", "after"}})).tool_text() ==
          "after");
    const std::string log = env.daemon_log();
    CHECK(count_of(log, "[live] ready: protocol") == 1);
    CHECK(count_of(log, "pid " + std::to_string(live) + " carried across the upgrade") == 3);
    // Its stderr lines from before the upgrades are still what mcpctl logs shows.
    const RunResult logs = env.ctl({"logs", "live"});
    CHECK(logs.out.find("hello from live") != std::string::npos);
    // It is still supervised: a crash is seen and restarted.
    session.call_tool("crash", nlohmann::json::object());
    REQUIRE(poll_until(10s, [&] {
        const auto pid = env.server_pid("live");
        return pid && *pid != live && env.state("live") == "running";
    }));
    CHECK(env.server("live")["restarts"] == 1);
    CHECK(follower.wait_for_output("hello from live", 10s, 2));
}

TEST_CASE("an upgrade waits a moment for a server that is starting, then carries it", "[upgrade]") {
    TestEnv env("upgrade-waits");
    env.write_registry(server_toml("slow", {"--start-delay-ms=700"}, {{"autostart", "false"}}));
    env.start_daemon();
    REQUIRE(env.ctl({"start", "slow"}).exit_code == 0);
    REQUIRE(env.state("slow") == "starting");
    const RunResult upgraded = env.ctl({"upgrade", "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);
    CHECK(env.state("slow") == "running");
    const auto pid = env.server_pid("slow");
    REQUIRE(pid);
    CHECK(env.daemon_log().find("pid " + std::to_string(*pid) + " carried across the upgrade") !=
          std::string::npos);
    CHECK(env.server("slow")["restarts"] == 0);
}

TEST_CASE("a server carried across an upgrade dies with a killed mcpd: the keeper still lists it",
          "[upgrade]") {
    TestEnv env("upgrade-keeper");
    env.write_registry(server_toml("live"));
    env.start_daemon();
    env.wait_state("live", "running");
    const pid_t live = *env.server_pid("live");
    const RunResult upgraded = env.ctl({"upgrade", "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);
    REQUIRE(env.server_pid("live") == live);
    CHECK(env.daemon().kill_hard() == -SIGKILL);
    CHECK(poll_until(10s, [&] { return !process_alive(live); }));
    env.drop_daemon();
}

TEST_CASE("the control, HTTP and metrics listeners are the same sockets after an upgrade, and all serve",
          "[upgrade][http]") {
    TestEnv env("upgrade-listeners");
    const std::string http = env.path("http.sock");
    const std::string token_file = env.path("metrics.token");
    std::ofstream(token_file) << "upgrade-metrics-token\n";
    REQUIRE(::chmod(token_file.c_str(), 0600) == 0);
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http +
                       "\"]\nmetrics_listen = \"127.0.0.1:0\"\nmetrics_token_file = " +
                       toml_string(token_file) + "\n\n" + server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t pid = env.daemon_pid();
    settled_descriptors(pid);
    const std::vector<std::string> before = open_sockets(pid);
    REQUIRE(before.size() == 3);  // the control, HTTP and metrics sockets, listening
    const RunResult upgraded = env.ctl({"upgrade", "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);
    // (A client that just left may hold a socket for a moment.)
    CHECK(poll_until(3s, [&] { return open_sockets(pid) == before; }));
    CHECK(env.daemon_log().find("replacing stale socket " + http) == std::string::npos);
    // MCP over HTTP on the socket that was never closed.
    const HttpAnswer init = curl({"--unix-socket", http, "-X", "POST", "-H",
                                  "Content-Type: application/json", "-H",
                                  "Accept: application/json, text/event-stream", "--data-binary",
                                  initialize_body("after-upgrade"), "http://localhost/mcp/demo"});
    INFO(init.raw);
    CHECK(init.status == 200);
    CHECK(init.body.find("mcpd-demo-server") != std::string::npos);
    // The metrics on the port the first process was given.
    const std::string log = env.daemon_log();
    const std::string served = "metrics served on http://";
    const std::size_t at = log.find(served);
    REQUIRE(at != std::string::npos);
    const std::string address = log.substr(at + served.size(), log.find("/metrics", at) - at - served.size());
    CHECK(count_of(log, served + address + "/metrics") == 2);  // before and after the exec
    const HttpAnswer metrics = curl({"-H", "Authorization: Bearer upgrade-metrics-token",
                                     "http://" + address + "/metrics"});
    INFO(metrics.raw);
    CHECK(metrics.status == 200);
    CHECK(metrics.body.find("mcpd_server_up") != std::string::npos);
}

TEST_CASE("only root and mcpd's own user may ask for an upgrade", "[upgrade][access]") {
    const OtherUser user;
    TestEnv env("upgrade-access");
    env.write_registry(kOpenSocket + server_toml("shared", {}, {{"autostart", "false"},
                                                                {"allow_users", "[\"" + user.id() + "\"]"}}));
    env.start_daemon();
    open_directory(env.dir());
    const RunResult denied = run_process(
        user.command({bin("mcpctl"), "--socket", env.socket(), "upgrade", "--binary", "/bin/true"}));
    INFO(denied.describe());
    CHECK(denied.exit_code == 1);
    CHECK(denied.err.find("permission denied: only root and mcpd's own user may do this") !=
          std::string::npos);
    CHECK(env.status_json()["daemon"]["upgrades"] == 0);
}
