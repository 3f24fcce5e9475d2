// The stop ladder (close stdin, wait stop_grace, SIGTERM, wait stop_timeout, SIGKILL) for
// single servers and for the whole daemon on SIGTERM or `mcpctl shutdown`.
#include <catch2/catch.hpp>
#include <filesystem>

#include "harness.h"

using namespace integration;
using nlohmann::json;

namespace {

const std::map<std::string, std::string> kLadder = {{"stop_grace", "\"400ms\""},
                                                    {"stop_timeout", "\"400ms\""}};

// Stop `name` with --wait and return its last_exit; prints how long the stop took.
json stop_and_measure(TestEnv& env, const std::string& name) {
    const pid_t pid = env.server_pid(name).value_or(-1);
    REQUIRE(pid > 0);
    const auto started = Clock::now();
    const RunResult stop = env.ctl({"stop", "--wait", name});
    const long long took = ms_since(started);
    INFO(stop.describe());
    REQUIRE(stop.exit_code == 0);
    WARN("stop ladder of '" << name << "' (stop_grace 400ms, stop_timeout 400ms) took " << took
                            << " ms");
    CHECK_FALSE(process_alive(pid));
    const json status = env.server(name);
    INFO("status: " << status.dump());
    CHECK(status["state"] == "stopped");
    CHECK(status["pid"].is_null());
    REQUIRE(status["last_exit"].is_object());
    CHECK(status["last_exit"]["reason"] == "stopped");
    return status["last_exit"];
}

}  // namespace

TEST_CASE("the stop ladder ends at the step the server gives in", "[stop]") {
    TestEnv env("stop-ladder");
    env.write_registry(
        server_toml("polite", {}, kLadder) + server_toml("deaf", {"--stdin-eof=ignore"}, kLadder) +
        server_toml("stubborn", {"--stdin-eof=ignore", "--ignore-sigterm"}, kLadder));
    env.start_daemon();
    for (const char* name : {"polite", "deaf", "stubborn"}) env.wait_state(name, "running");

    SECTION("a server that exits on stdin EOF needs no signal") {
        const json last = stop_and_measure(env, "polite");
        CHECK(last["step"] == "eof");
        CHECK(last["status"] == 0);
        CHECK(env.daemon().log().find("[polite] sending SIG") == std::string::npos);
    }
    SECTION("a server that ignores EOF gets SIGTERM after stop_grace") {
        const json last = stop_and_measure(env, "deaf");
        CHECK(last["step"] == "term");
        CHECK(last["status"] == -15);
        CHECK(env.daemon().log().find("[deaf] sending SIGKILL") == std::string::npos);
    }
    SECTION("a server that also ignores SIGTERM gets SIGKILL after stop_timeout") {
        const json last = stop_and_measure(env, "stubborn");
        CHECK(last["step"] == "kill");
        CHECK(last["status"] == -9);
        const std::string log = env.daemon().log();
        CHECK(log.find("[stubborn] sending SIGTERM") != std::string::npos);
        CHECK(log.find("[stubborn] sending SIGKILL") != std::string::npos);
    }
}

TEST_CASE("SIGTERM stops every server through the ladder and mcpd exits 0", "[stop]") {
    TestEnv env("sigterm");
    env.write_registry(
        server_toml("polite", {}, kLadder) + server_toml("deaf", {"--stdin-eof=ignore"}, kLadder) +
        server_toml("stubborn", {"--stdin-eof=ignore", "--ignore-sigterm"}, kLadder));
    DaemonProcess& daemon = env.start_daemon();
    for (const char* name : {"polite", "deaf", "stubborn"}) env.wait_state(name, "running");
    REQUIRE(env.marked_processes().size() == 3);

    const auto started = Clock::now();
    daemon.signal(SIGTERM);
    const auto status = daemon.wait_exit(20s);
    REQUIRE(status.has_value());
    WARN("mcpd exited " << ms_since(started) << " ms after SIGTERM (longest ladder: 800 ms)");
    CHECK(*status == 0);
    CHECK(env.marked_processes().empty());
    const std::string log = daemon.log();
    INFO(log);
    CHECK(log.find("exited with status 0 (eof)") != std::string::npos);
    CHECK(log.find("exited with status -15 (term)") != std::string::npos);
    CHECK(log.find("exited with status -9 (kill)") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(env.socket()));
    CHECK(env.ctl({"status"}).exit_code == 3);
}

TEST_CASE("mcpctl shutdown stops every server and mcpd exits 0", "[stop]") {
    TestEnv env("shutdown");
    env.write_registry(server_toml("polite", {}, kLadder) +
                       server_toml("deaf", {"--stdin-eof=ignore"}, kLadder));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("polite", "running");
    env.wait_state("deaf", "running");

    const RunResult shutdown = env.ctl({"shutdown", "--wait"});
    INFO(shutdown.describe());
    CHECK(shutdown.exit_code == 0);
    const auto status = daemon.wait_exit(20s);
    REQUIRE(status.has_value());
    CHECK(*status == 0);
    CHECK(env.marked_processes().empty());
}

TEST_CASE("a second SIGTERM during a slow stop ladder kills at once", "[stop]") {
    TestEnv env("double-sigterm");
    env.write_registry(server_toml("stubborn", {"--stdin-eof=ignore", "--ignore-sigterm"},
                                   {{"stop_grace", "\"20s\""}, {"stop_timeout", "\"20s\""}}));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("stubborn", "running");

    const auto started = Clock::now();
    daemon.signal(SIGTERM);
    // The ladder has begun once the server says its stdin closed.
    wait_until("the server reports its stdin closed", 10s,
               [&] { return daemon.log().find("stdin closed") != std::string::npos; });
    CHECK_FALSE(daemon.poll_exit().has_value());
    daemon.signal(SIGTERM);
    // Without the second signal this would take stop_grace + stop_timeout = 40 s.
    const auto status = daemon.wait_exit(15s);
    REQUIRE(status.has_value());
    WARN("mcpd exited " << ms_since(started)
                        << " ms after the first SIGTERM (stop_grace 20s, stop_timeout 20s)");
    CHECK(*status == 0);
    const std::string log = daemon.log();
    INFO(log);
    CHECK(log.find("exited with status -9 (kill)") != std::string::npos);
    CHECK(env.marked_processes().empty());
}
