// An upgrade in place carries group sessions (docs/UPGRADE.md): a registry group and one made
// on the spot go on with their members' sessions and their lists; a long call through a group
// goes on with its progress, and a stateless-era client's listen stream through a group still
// delivers, each answered once by the new process.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "call_text.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

TEST_CASE("group sessions are carried: a registry group and one made on the spot, their members with them",
          "[upgrade]") {
    TestEnv env("upgrade-groups");
    env.write_registry(server_toml("alpha") + server_toml("beta") + R"(
[groups.dev]
servers = ["alpha", "beta"]
exclude_tools = ["crash"]
)");
    env.start_daemon();
    env.wait_state("alpha", "running");
    env.wait_state("beta", "running");
    McpSession dev(env.socket(), "dev");
    dev.initialize("registry-group");
    PipedProcess agent({bin("mcpctl"), "--socket", env.socket(), "connect", "alpha", "beta"},
                       env.path("connect.err"));
    McpSession& adhoc = agent.session();
    adhoc.initialize("adhoc-group");
    const auto tool_names = [](McpSession& s) {
        const McpMessage listed = s.wait_response(s.request("tools/list"));
        std::vector<std::string> names;
        for (const json& tool : listed.json["result"]["tools"]) names.push_back(tool["name"].get<std::string>());
        std::sort(names.begin(), names.end());
        return names;
    };
    const std::vector<std::string> dev_tools = tool_names(dev);
    const std::vector<std::string> adhoc_tools = tool_names(adhoc);
    REQUIRE(std::find(dev_tools.begin(), dev_tools.end(), "alpha__echo") != dev_tools.end());
    CHECK(std::find(dev_tools.begin(), dev_tools.end(), "alpha__crash") == dev_tools.end());
    const std::vector<pid_t> processes = env.marked_processes();

    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        CHECK(env.marked_processes() == processes);
        const std::string r = std::to_string(round);
        CHECK(call_text(dev, "alpha__echo", {{"text", "dev " + r}}) == "dev " + r);
        CHECK(call_text(dev, "beta__echo", {{"text", "dev beta " + r}}) == "dev beta " + r);
        CHECK(call_text(adhoc, "beta__echo", {{"text", "adhoc " + r}}) == "adhoc " + r);
        // The same lists, filters included.
        CHECK(tool_names(dev) == dev_tools);
        CHECK(tool_names(adhoc) == adhoc_tools);
    }
    CHECK(count_of(env.daemon_log(), "carried across the upgrade (pid") >= 4);
    const RunResult groups = env.ctl({"--json", "sessions"});
    INFO(groups.out);
    CHECK(groups.exit_code == 0);
    adhoc.close_write();
    CHECK(agent.wait_exit(10s) == 0);
    dev.close_write();
    CHECK(dev.wait_closed(10s));
    CHECK(poll_until(5s, [&] { return env.server("alpha")["sessions"] == 0; }));
}

TEST_CASE("a long call through a group is carried, not waited for: its progress and answer come once",
          "[upgrade][group]") {
    TestEnv env("upgrade-group-call");
    env.write_registry(server_toml("alpha") + server_toml("beta") + "\n[groups.dev]\nservers = [\"alpha\", \"beta\"]\n");
    env.start_daemon();
    env.wait_state("alpha", "running");
    env.wait_state("beta", "running");
    McpSession dev(env.socket(), "dev");
    dev.initialize("group-long-call");
    // Forty steps of 150 ms: three upgrades come and go well before its answer (under the
    // sanitizers an upgrade takes over a second; three took 3.6 s on a loaded machine).
    const json id = dev.call_tool("alpha__slow", {{"steps", 40}, {"interval_ms", 150}}, {{"progressToken", "through-group"}});
    REQUIRE(dev.wait_for([](const McpMessage& m) { return m.method() == "notifications/progress"; }, 5s));
    for (int round = 0; round < 3; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
    }
    dev.pump(10ms);
    CHECK(dev.responses().empty());  // not waited for: still under way after the upgrades
    CHECK(call_text(dev, "beta__echo", {{"text", "beside it"}}) == "beside it");
    const McpMessage reply = dev.wait_response(id, 15s);
    CHECK(reply.tool_text() == "done after 40 steps");
    int last = 1;
    for (const McpMessage& p : dev.take_notifications("notifications/progress")) {
        CHECK(p.json["params"]["progressToken"] == "through-group");
        CHECK(p.json["params"]["progress"] == last + 1);
        last = p.json["params"]["progress"].get<int>();
    }
    CHECK(last == 40);
    dev.pump(200ms);
    CHECK(dev.responses().empty());
}

TEST_CASE("a stateless-era listen stream through a group is carried: list changes still reach it, tagged",
          "[upgrade][group][modern]") {
    TestEnv env("upgrade-group-listen");
    env.write_registry(server_toml("new", {"--era=dual", "--tick-ms=0"}) + "\n" +
                       server_toml("old", {"--era=legacy", "--tick-ms=0"}) +
                       "\n[groups.mixed]\nservers = [\"new\", \"old\"]\n");
    env.start_daemon();
    const json meta = modern_meta("modern-agent");
    McpSession modern(env.socket(), "mixed");
    REQUIRE(modern.wait_response(modern.request("server/discover", {{"_meta", meta}})).json.contains("result"));
    modern.request_raw("\"stream-1\"", "subscriptions/listen",
                       {{"notifications", {{"toolsListChanged", true}}}, {"_meta", meta}});
    REQUIRE(modern.wait_for([](const McpMessage& m) { return m.method() == "notifications/subscriptions/acknowledged"; },
                            10s));
    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
        modern.take_notifications();
        modern.wait_response(modern.call_tool("new__touch_tools", json::object(), meta));
        const auto changed = modern.wait_for(
            [](const McpMessage& m) { return m.method() == "notifications/tools/list_changed"; }, 10s);
        REQUIRE(changed.has_value());
        CHECK(changed->json["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "stream-1");
    }
    modern.pump(200ms);
    // The stream is still open: nothing answered it, and each change came once.
    for (const McpMessage& m : modern.responses()) CHECK(m.json["id"] != "stream-1");
    CHECK(modern.notifications("notifications/tools/list_changed").size() <= 1);
}
