// An upgrade in place carries a boxed server (docs/UPGRADE.md, docs/SANDBOX.md): its process
// goes on in the box the kernel holds for it, status says how the box was enforced as before,
// and what its rules deny is still denied.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "call_text.h"
#include "harness.h"
#include "loopback_listener.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

TEST_CASE("a boxed server is carried in its box: the same process, still denied what its rules deny",
          "[upgrade][sandbox]") {
    TestEnv env("upgrade-boxed");
    const LoopbackListener listening;
    const json target = {{"host", "127.0.0.1"}, {"port", listening.port}};
    env.write_registry(server_toml("boxed", {"--probe-tools"}, {{"sandbox", "{ network = \"none\", open_files = 256 }"}}));
    env.start_daemon();
    env.wait_state("boxed", "running");
    const pid_t boxed = *env.server_pid("boxed");
    McpSession session(env.socket(), "boxed");
    session.initialize("boxed-agent");
    const std::string before = call_text(session, "connect_tcp", target);
    const json box = env.server("boxed").at("sandbox");
    INFO(box.dump());
    REQUIRE(box.at("enforced").is_array());
    const bool enforced = !box.at("enforced").empty();
    if (enforced) CHECK(before.find("cannot connect") != std::string::npos);
    else WARN("network none cannot be enforced here: " << box.dump());

    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(env.server_pid("boxed") == boxed);
        // How the box was enforced, as status said before the upgrade.
        CHECK(env.server("boxed").at("sandbox") == box);
        // The same session, the same answer: denied where the box holds.
        CHECK(call_text(session, "connect_tcp", target) == before);
    }
    // A process started after the upgrades gets a box of its own again.
    REQUIRE(env.ctl({"restart", "boxed", "--wait"}).exit_code == 0);
    CHECK(env.server_pid("boxed") != boxed);
    CHECK(env.server("boxed").at("sandbox") == box);
}
