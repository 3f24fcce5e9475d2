// An upgrade in place (docs/UPGRADE.md), as far as it is built: the binary that is to replace
// mcpd reads the state it would be handed from a descriptor (`mcpd --check-state FD`) and
// acknowledges it with its digest, or refuses it with a sentence, so a state the new binary
// cannot take is caught before any exec.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/sha256.h"
#include "common/state_file.h"
#include "harness.h"

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
            {"era_modern", false},     {"last_exit", nullptr}};
}

json state_body(const std::string& server_state) {
    return {{"mcpd_version", "0.1.0"}, {"pid", 4242},       {"config", "/etc/mcpd/mcpd.toml"},
            {"socket", "/run/mcpd/mcpd.sock"}, {"uptime_ms", 60000}, {"upgrades", 0},
            {"servers", {{{"name", "demo"}, {"supervisor", supervisor_state(server_state)}}}}};
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
    for (const std::string server_state : {"stopped", "backoff", "failed"}) {
        const std::string text = mcpd::state_file::encode(state_body(server_state));
        const RunResult checked = check_state(env, text);
        INFO(server_state << ": " << checked.describe());
        CHECK(checked.exit_code == 0);
        CHECK(checked.out == "mcpd-state ok 1 " + mcpd::sha256_hex(text) + "\n");
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
        {mcpd::state_file::encode(state_body("stopped"), 2), "of version 2"},
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
