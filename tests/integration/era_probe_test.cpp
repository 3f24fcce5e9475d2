// The era probe (era = "auto"): server/discover before initialize. A server that is slow to
// start is judged by its answer, not by how long it took; one that exits on the probe is
// started again as a legacy server, without counting a crash.
#include <catch2/catch.hpp>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr const char* kProbeExit = "exited on the era probe; starting it as a legacy server";
constexpr const char* kFallback = "no answer to server/discover";

// Any counted failure would leave the server in backoff for a long time, or failed. A child
// that never shows life is probed for half of start_timeout: 10 s, far beyond the delays here.
const std::map<std::string, std::string> kNoSecondChance = {
    {"restart", "\"always\""},
    {"restart_delay", "\"1m\""},
    {"start_limit", "{ burst = 1, interval = \"5m\" }"},
    {"start_timeout", "\"20s\""},
};

// `name` is running in `protocol`, started once, with nothing counted against it.
void check_clean_start(const TestEnv& env, const std::string& name, const std::string& protocol) {
    const json status = env.server(name);
    INFO("status: " << status.dump());
    CHECK(status["state"] == "running");
    CHECK(status["restarts"] == 0);
    CHECK(status["error"].is_null());
    const std::string log = env.daemon_log();
    CHECK(log.find("[" + name + "] ready: protocol " + protocol) != std::string::npos);
    CHECK(log.find("handshake failed") == std::string::npos);
    CHECK(log.find("-> backoff") == std::string::npos);
}

}  // namespace

TEST_CASE("a modern server silent for seconds before it reads stdin is judged modern",
          "[era-probe]") {
    TestEnv env("probe-slow-modern");
    // Three seconds: longer than the silence that means "legacy", counted from spawn.
    env.write_registry(
        server_toml("slow", {"--era=modern", "--start-delay-ms=3000"}, kNoSecondChance));
    env.start_daemon();
    env.wait_state("slow", "running", 20s);
    check_clean_start(env, "slow", "2026-07-28");
    CHECK(env.server("slow")["last_exit"].is_null());
    CHECK(env.daemon_log().find(kFallback) == std::string::npos);
}

TEST_CASE("a modern server that logs at once but reads stdin late is judged by its late answer",
          "[era-probe]") {
    TestEnv env("probe-late-modern");
    env.write_registry(server_toml(
        "late", {"--era=modern", "--stderr-banner=loading the model", "--start-delay-ms=4000"},
        kNoSecondChance));
    env.start_daemon();
    env.wait_state("late", "running", 20s);
    // Its banner started the silence: mcpd sent initialize after two seconds, then the
    // DiscoverResult arrived (first, on the same stdin) and decided.
    CHECK(env.daemon_log().find(kFallback) != std::string::npos);
    check_clean_start(env, "late", "2026-07-28");

    // It serves modern sessions.
    McpSession session(env.socket(), "late");
    const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities", json::object()}};
    const json id = session.request(
        "tools/call", {{"name", "echo"}, {"arguments", {{"text", "hi"}}}, {"_meta", meta}});
    const McpMessage reply = session.wait_response(id);
    INFO(reply.raw);
    CHECK_FALSE(reply.is_error());
    CHECK(reply.tool_text() == "hi");
}

TEST_CASE("a legacy server silent for seconds is judged by its answer to the probe",
          "[era-probe]") {
    TestEnv env("probe-slow-legacy");
    env.write_registry(server_toml("slow", {"--start-delay-ms=3000"}, kNoSecondChance));
    env.start_daemon();
    env.wait_state("slow", "running", 20s);
    check_clean_start(env, "slow", "2025-11-25");
    // Its -32601 decided, not a timeout.
    CHECK(env.daemon_log().find(kFallback) == std::string::npos);
}

TEST_CASE("a server that exits on server/discover runs as legacy with no crash counted",
          "[era-probe]") {
    TestEnv env("probe-exit");
    env.write_registry(server_toml("strict", {"--exit-on-discover"}, kNoSecondChance));
    env.start_daemon();
    env.wait_state("strict", "running", 20s);
    check_clean_start(env, "strict", "2025-11-25");
    const json status = env.server("strict");
    REQUIRE(status["last_exit"].is_object());
    CHECK(status["last_exit"]["reason"] == "era-probe");
    CHECK(status["last_exit"]["status"] == 1);
    CHECK(status["last_exit"]["step"] == "exit");
    CHECK(count_of(env.daemon_log(), kProbeExit) == 1);

    // The verdict is kept: a restart goes straight to initialize.
    const RunResult restart = env.ctl({"restart", "--wait", "strict"});
    INFO(restart.describe());
    REQUIRE(restart.exit_code == 0);
    env.wait_state("strict", "running");
    CHECK(count_of(env.daemon_log(), kProbeExit) == 1);
    CHECK(env.server("strict")["restarts"] == 0);
}

TEST_CASE("a slow server that exits on server/discover after the fallback is not a crash",
          "[era-probe]") {
    TestEnv env("probe-slow-exit");
    // It logs at once, so initialize follows the unanswered probe after two seconds; two
    // seconds later it reads the probe and exits, before ever reading the initialize.
    env.write_registry(server_toml(
        "strict", {"--exit-on-discover", "--stderr-banner=starting", "--start-delay-ms=4000"},
        kNoSecondChance));
    env.start_daemon();
    env.wait_state("strict", "running", 30s);
    check_clean_start(env, "strict", "2025-11-25");
    const json status = env.server("strict");
    INFO("status: " << status.dump());
    REQUIRE(status["last_exit"].is_object());
    CHECK(status["last_exit"]["reason"] == "era-probe");
    CHECK(count_of(env.daemon_log(), kProbeExit) == 1);
}
