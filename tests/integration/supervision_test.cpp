// Supervision: crash loops and the start limit, exec failures, process groups and
// grandchildren, PR_SET_PDEATHSIG, and reaping.
#include <algorithm>
#include <catch2/catch.hpp>
#include <thread>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

TEST_CASE("a failed server answers a session's requests at once, not after start_timeout",
          "[supervision]") {
    TestEnv env("failed-answers");
    // Up for a second, long enough to attach; then it crashes for good.
    env.write_registry(server_toml("crashy", {"--exit-after-ms=1000", "--exit-code=3"},
                                   {{"restart", "\"always\""},
                                    {"restart_delay", "\"100ms\""},
                                    {"start_timeout", "\"10m\""},
                                    {"start_limit", "{ burst = 1, interval = \"1m\" }"}}));
    env.start_daemon();
    McpSession session(env.socket(), "crashy");
    env.wait_state("crashy", "failed", 30s);

    const json id = session.request("initialize", {{"protocolVersion", "2025-06-18"},
                                                   {"capabilities", json::object()},
                                                   {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
    // start_timeout is ten minutes: only the failed state can answer within the wait.
    const McpMessage reply = session.wait_response(id, 30s);
    INFO(reply.raw);
    REQUIRE(reply.is_error());
    const std::string message = reply.json["error"]["message"].get<std::string>();
    CHECK(message.find("the server is not available: it failed") != std::string::npos);
    CHECK(message.find("run 'mcpctl start crashy'") != std::string::npos);
    CHECK(env.server("crashy")["state"] == "failed");  // asking does not restart it

    // Attaching to it now is refused, with the advice given once.
    const RunResult attach = env.ctl({"connect", "crashy"});
    const std::string advice = "fix it, then run 'mcpctl start crashy'";
    const std::size_t first = attach.err.find(advice);
    INFO(attach.describe());
    CHECK(attach.exit_code != 0);
    CHECK(first != std::string::npos);
    CHECK(attach.err.find(advice, first + 1) == std::string::npos);
}

TEST_CASE("a crashing server backs off, then fails at the start limit", "[supervision]") {
    TestEnv env("crash-loop");
    env.write_registry(server_toml("crashy", {"--exit-after-ms=50", "--exit-code=3"},
                                   {{"restart", "\"always\""},
                                    {"restart_delay", "\"100ms\""},
                                    {"start_limit", "{ burst = 3, interval = \"30s\" }"}}));
    const auto started = Clock::now();
    env.start_daemon();
    env.wait_state("crashy", "failed", 30s);
    WARN("crash loop reached failed after " << ms_since(started) << " ms");

    const json crashy = env.server("crashy");
    INFO("status: " << crashy.dump());
    CHECK(crashy["wanted"] == "up");
    CHECK(crashy["pid"].is_null());
    REQUIRE(crashy["error"].is_string());
    CHECK(crashy["error"].get<std::string>().find("start_limit") != std::string::npos);
    CHECK(crashy["restarts"] == 3);  // burst 3: the 4th failure within the interval gives up
    REQUIRE(crashy["last_exit"].is_object());
    CHECK(crashy["last_exit"]["status"] == 3);
    CHECK(crashy["last_exit"]["step"] == "exit");
    CHECK(crashy["last_exit"]["reason"] == "crashed");
    CHECK(env.daemon().log().find("-> backoff") != std::string::npos);

    const RunResult table = env.ctl({"status"});
    CHECK(table.out.find("crashy: ") != std::string::npos);
    CHECK(table.out.find("start_limit") != std::string::npos);

    // A manual start brings it back with its counters reset.
    const RunResult start = env.ctl({"--json", "start", "--wait", "crashy"});
    INFO(start.describe());
    REQUIRE(start.exit_code == 0);
    const json result = json::parse(start.out);
    REQUIRE(result["servers"].size() == 1);
    const json& back = result["servers"][0];
    CHECK(back["state"] == "running");
    CHECK(back["restarts"] == 0);
    CHECK(back["error"].is_null());
}

TEST_CASE("a missing command fails at once without restarts", "[supervision]") {
    TestEnv env("missing-command");
    env.write_registry(
        server_toml("ghost", {}, {{"restart", "\"always\""}}, "mcpd-test-no-such-command") +
        server_toml("demo"));
    env.start_daemon();
    env.wait_state("ghost", "failed");

    const RunResult table = env.ctl({"status"});
    INFO(table.describe());
    CHECK(table.exit_code == 0);
    CHECK(table.out.find("No such file or directory") != std::string::npos);
    CHECK(table.out.find("mcpd-test-no-such-command") != std::string::npos);

    // It stays failed: no silent restart loop (watched over a few polls).
    for (int i = 0; i < 10; ++i) {
        const json ghost = env.server("ghost");
        INFO("status: " << ghost.dump());
        REQUIRE(ghost["state"] == "failed");
        REQUIRE(ghost["pid"].is_null());
        REQUIRE(ghost["restarts"] == 0);
        REQUIRE(ghost["error"].get<std::string>().find("No such file or directory") !=
                std::string::npos);
        std::this_thread::sleep_for(60ms);
    }
    CHECK(count_of(env.daemon().log(), "[ghost] cannot start") == 1);

    const RunResult start = env.ctl({"start", "--wait", "ghost"});
    INFO(start.describe());
    CHECK(start.exit_code == 1);
    CHECK(start.err.find("No such file or directory") != std::string::npos);
    CHECK(env.state("demo") == "running");
}

TEST_CASE("stopping a server ends its whole process group", "[supervision]") {
    TestEnv env("grandchildren");
    env.write_registry(
        server_toml("family", {"-c", "sleep 300 & sleep 300 & exec mcpd-demo-server"}, {}, "sh"));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("family", "running");

    std::vector<pid_t> sleeps;
    wait_until("both sleeps are running", 10s, [&] {
        sleeps = named(env.marked_processes(), "sleep");
        return sleeps.size() == 2;
    });
    const pid_t server_pid = *env.server_pid("family");
    INFO("before stop: " << describe_processes(env.marked_processes()));

    const RunResult stop = env.ctl({"stop", "--wait", "family"});
    INFO(stop.describe());
    REQUIRE(stop.exit_code == 0);
    wait_until("no process with the marker is left", 10s,
               [&] { return env.marked_processes().empty(); });
    // Reaped, not merely dead: mcpd is their subreaper and must collect them.
    wait_until("the sleeps and the server are reaped", 5s, [&] {
        for (pid_t pid : sleeps)
            if (process_state(pid)) return false;
        return !process_state(server_pid).has_value();
    });
    expect_no_lasting_zombies(daemon.pid());
}

TEST_CASE("kill -9 of mcpd takes its children down (PR_SET_PDEATHSIG)", "[supervision]") {
    TestEnv env("pdeathsig");
    env.write_registry(server_toml("a") +
                       server_toml("b", {"--stdin-eof=ignore", "--ignore-sigterm"}));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("a", "running");
    env.wait_state("b", "running");

    const std::vector<pid_t> marked = env.marked_processes();
    std::vector<pid_t> direct;
    for (pid_t child : children_of(daemon.pid()))
        if (std::find(marked.begin(), marked.end(), child) != marked.end()) direct.push_back(child);
    INFO("children of mcpd with the marker: " << describe_processes(direct));
    REQUIRE(direct.size() == 2);

    const auto killed = Clock::now();
    CHECK(daemon.kill_hard() == -SIGKILL);
    wait_until("no child of the killed mcpd is alive", 10s, [&] {
        return std::none_of(direct.begin(), direct.end(), [](pid_t p) { return process_alive(p); });
    });
    WARN("children were gone " << ms_since(killed) << " ms after SIGKILL to mcpd");
    // Nothing else of its servers' may be left either. Polled, not read once: a process the
    // kernel is still tearing down can show in /proc for a moment after its siblings are gone.
    std::vector<pid_t> left;
    const bool none_left = poll_until(5s, [&] {
        left = env.marked_processes();
        return left.empty();
    });
    INFO("left behind: " << describe_processes(left));
    CHECK(none_left);
    env.drop_daemon();
}

TEST_CASE("no child of mcpd stays a zombie through restarts and stops", "[supervision]") {
    TestEnv env("zombies");
    env.write_registry(
        server_toml(
            "flappy", {"--exit-after-ms=150", "--exit-code=1"},
            {{"restart", "\"always\""}, {"start_limit", "{ burst = 1000, interval = \"1s\" }"}}) +
        server_toml("plain") +
        server_toml("family", {"-c", "sleep 300 & exec mcpd-demo-server"}, {}, "sh"));
    DaemonProcess& daemon = env.start_daemon();
    const pid_t mcpd = daemon.pid();
    env.wait_state("plain", "running");
    env.wait_state("family", "running");
    int seen = expect_no_lasting_zombies(mcpd, 500ms);

    for (int i = 0; i < 3; ++i) {
        REQUIRE(env.ctl({"restart", "--wait", "plain"}).exit_code == 0);
        seen += expect_no_lasting_zombies(mcpd, 200ms);
    }
    REQUIRE(env.ctl({"restart", "--wait", "family"}).exit_code == 0);
    seen += expect_no_lasting_zombies(mcpd, 200ms);
    REQUIRE(env.ctl({"stop", "--wait", "family"}).exit_code == 0);
    seen += expect_no_lasting_zombies(mcpd, 200ms);

    // flappy crashes every 150 ms and comes back; watch through a few cycles.
    wait_until("flappy has restarted 4 times", 20s, [&] {
        seen += expect_no_lasting_zombies(mcpd, 0ms);
        const json flappy = env.server("flappy");
        return flappy["restarts"].get<int>() >= 4;
    });
    REQUIRE(env.ctl({"stop", "--wait", "flappy", "plain"}).exit_code == 0);
    seen += expect_no_lasting_zombies(mcpd, 300ms);
    WARN("short-lived zombies observed (reaped within 1 s): " << seen);
    CHECK(env.marked_processes().empty());
}
