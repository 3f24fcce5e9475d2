// Descendants that leave the server's process group (setsid, setpgid) are stopped with the
// server: when it is stopped, restarted or crashes, when mcpd shuts down, and when mcpd is
// killed (the keeper). None pile up over restarts.
#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>

#include "harness.h"

using namespace integration;

namespace {

// The server: a shell that starts three sleeps which leave its process group, each its own
// way, then becomes the demo server (the same pid, so the sleeps stay below it):
// - 301: setsid(), a child of the server in a session of its own;
// - 302: setpgid(0, 0), a group of its own in the server's session;
// - 303: setsid -f, whose parent exits at once: back to mcpd (their subreaper), found by the
//   tag in its environment.
// Their output goes to /dev/null, so they hold no pipe of the server's.
const std::string kEscapes =
    "setsid sleep 301 </dev/null >/dev/null 2>&1 & "
    "perl -e 'setpgrp(0, 0); exec qw(sleep 302)' </dev/null >/dev/null 2>&1 & "
    "setsid -f sleep 303 </dev/null >/dev/null 2>&1; ";

// 304 besides: one that also cleared its environment but for the test's marker, so it
// carries no tag and cannot be told to be this server's once its parent has exited. mcpd
// stops it on its own exit.
std::string untagged_escape(const TestEnv& env) {
    return "env -i MCPD_TEST_MARKER=" + env.marker() +
           " setsid -f sleep 304 </dev/null >/dev/null 2>&1; ";
}

std::string escaping_server(const std::string& name, const std::string& script) {
    return server_toml(name, {"-c", script + "exec mcpd-demo-server"}, {}, "sh");
}

std::vector<pid_t> sleeps(const TestEnv& env) {
    std::vector<pid_t> out;
    for (pid_t pid : env.marked_processes()) {
        if (process_name(pid) == "sleep") out.push_back(pid);
    }
    return out;
}

void wait_sleeps(const TestEnv& env, std::size_t count) {
    wait_until(std::to_string(count) + " escaped sleeps run", 20s,
               [&] { return sleeps(env).size() == count; });
}

}  // namespace

TEST_CASE("escaped descendants are stopped with their server, and only its own",
          "[escape]") {
    TestEnv env("escape-stop");
    env.write_registry(escaping_server("esc", kEscapes) + server_toml("other"));
    env.start_daemon();
    env.wait_state("esc", "running");
    env.wait_state("other", "running");
    wait_sleeps(env, 3);
    const std::optional<pid_t> other = env.server_pid("other");
    REQUIRE(other);

    SECTION("stop") {
        REQUIRE(env.ctl({"stop", "esc"}).exit_code == 0);
        env.wait_state("esc", "stopped");
        wait_until("no escaped sleep is left", 20s, [&] { return sleeps(env).empty(); });
    }
    SECTION("a crash") {
        const std::optional<pid_t> server = env.server_pid("esc");
        REQUIRE(server);
        const std::vector<pid_t> before = sleeps(env);
        REQUIRE(::kill(*server, SIGKILL) == 0);
        wait_until("the crashed server's sleeps are gone", 20s, [&] {
            return std::none_of(before.begin(), before.end(), process_alive);
        });
        // It is restarted, with three new ones.
        env.wait_state("esc", "running");
        wait_sleeps(env, 3);
    }
    CHECK(env.daemon_log().find("that had left its process group") != std::string::npos);
    // The other server was not touched.
    CHECK(process_alive(*other));
    CHECK(env.server_pid("other") == other);
}

TEST_CASE("escaped descendants do not pile up over restarts", "[escape]") {
    TestEnv env("escape-restart");
    env.write_registry(escaping_server("esc", kEscapes));
    env.start_daemon();
    env.wait_state("esc", "running");
    wait_sleeps(env, 3);
    for (int round = 1; round <= 10; ++round) {
        INFO("restart " << round);
        const std::vector<pid_t> before = sleeps(env);
        REQUIRE(env.ctl({"restart", "--wait", "esc"}).exit_code == 0);
        wait_until("the old server's sleeps are gone", 20s, [&] {
            return std::none_of(before.begin(), before.end(), process_alive);
        });
        wait_sleeps(env, 3);
    }
    const std::vector<pid_t> left = sleeps(env);
    INFO("sleeps after 10 restarts: " << describe_processes(left));
    CHECK(left.size() == 3);
}

TEST_CASE("escaped descendants are stopped when mcpd shuts down", "[escape]") {
    TestEnv env("escape-shutdown");
    env.write_registry(escaping_server("esc", kEscapes + untagged_escape(env)));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("esc", "running");
    wait_sleeps(env, 4);
    CHECK(daemon.terminate() == 0);
    wait_until("no escaped sleep is left, the untagged one included", 20s,
               [&] { return sleeps(env).empty(); });
    CHECK(env.daemon_log().find("leftover process(es) of stopped servers") != std::string::npos);
    env.drop_daemon();
}

TEST_CASE("escaped descendants are stopped when mcpd is killed", "[escape]") {
    TestEnv env("escape-kill");
    env.write_registry(escaping_server("esc", kEscapes));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("esc", "running");
    wait_sleeps(env, 3);
    CHECK(daemon.kill_hard() == -SIGKILL);
    wait_until("the keeper stopped every escaped sleep", 20s, [&] { return sleeps(env).empty(); });
    env.drop_daemon();
}
