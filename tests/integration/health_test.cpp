// Readiness and health: a server is running only after the MCP handshake, a hung server is
// restarted, and noise on stdout or orphaned grandchildren are handled without harm.
#include <catch2/catch.hpp>

#include "harness.h"

using namespace integration;
using nlohmann::json;

TEST_CASE("a server that never answers initialize is ended at start_timeout", "[health]") {
    TestEnv env("start-timeout");
    env.write_registry(server_toml("mute", {"--no-initialize-reply"},
                                   {{"start_timeout", "\"300ms\""},
                                    {"restart_delay", "\"100ms\""},
                                    {"start_limit", "{ burst = 1, interval = \"30s\" }"}}));
    env.start_daemon();
    env.wait_state("mute", "failed", 20s);
    const json mute = env.server("mute");
    INFO(mute.dump());
    REQUIRE(mute["last_exit"].is_object());
    CHECK(mute["last_exit"]["reason"] == "start-timeout");
    CHECK(mute["last_exit"]["step"] == "eof");  // it exits on stdin EOF like a good server
    // It was starting until start_timeout and never running. From the log, not from a status
    // read after start: on a loaded machine that read can come after the 300 ms.
    const std::string log = env.daemon().log();
    CHECK(log.find("[mute] stopped -> starting") != std::string::npos);
    CHECK(log.find("[mute] starting -> stopping (start-timeout: no answer to initialize within "
                   "start_timeout") != std::string::npos);
    CHECK(log.find("-> running") == std::string::npos);
}

TEST_CASE("a server that stops answering pings is restarted as unresponsive", "[health]") {
    TestEnv env("unresponsive");
    env.write_registry(server_toml("hung", {"--no-ping-reply"},
                                   {{"health_interval", "\"200ms\""},
                                    {"restart_delay", "\"100ms\""},
                                    {"restart", "\"on-failure\""}}) +
                       server_toml("healthy", {}, {{"health_interval", "\"200ms\""}}));
    env.start_daemon();
    // State and pid from one status: a slow machine may restart it between two reads.
    pid_t first = 0;
    wait_until("hung is running", 20s, [&] {
        const json hung = env.server("hung");
        if (hung["state"] != "running" || !hung["pid"].is_number_integer()) return false;
        first = hung["pid"].get<pid_t>();
        return true;
    });
    // One ping goes out after 200 ms; unanswered by the next tick, the server is restarted.
    wait_until("hung is restarted", 20s, [&] {
        const json hung = env.server("hung");
        return hung["last_exit"].is_object() && hung["last_exit"]["reason"] == "unresponsive";
    });
    env.wait_state("hung", "running");
    CHECK(env.server_pid("hung") != first);
    // The server that answers its pings is left alone all along.
    const json healthy = env.server("healthy");
    CHECK(healthy["last_exit"].is_null());
    CHECK(healthy["state"] == "running");
}

TEST_CASE("non-JSON output on a server's stdout is dropped and logged", "[health]") {
    TestEnv env("garbage-stdout");
    env.write_registry(server_toml("noisy", {"--garbage-stdout"}));
    env.start_daemon();
    env.wait_state("noisy", "running");
    CHECK(env.daemon().log().find("not a JSON-RPC message") != std::string::npos);
}

TEST_CASE("an orphan that outlives its server's process group is reaped by mcpd", "[health]") {
    TestEnv env("orphan");
    // The grandchild escapes the server's process group with setsid, so the group sweep
    // cannot reach it; when it exits it has been reparented to mcpd (a child subreaper).
    env.write_registry(server_toml(
        "launcher", {"-c", "(setsid sleep 0.3 &); exec mcpd-demo-server"}, {}, "sh"));
    env.start_daemon();
    env.wait_state("launcher", "running");
    wait_until("the orphan is reaped and logged", 20s, [&] {
        return env.daemon().log().find("reaped adopted orphan") != std::string::npos;
    });
    expect_no_lasting_zombies(env.daemon_pid());
}
