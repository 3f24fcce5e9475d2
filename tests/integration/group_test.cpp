// Groups: one MCP session over several pooled servers ([groups.NAME], `mcpctl connect a b`),
// with prefixed names, filters, routing to the right member and a member's restart; and a
// server with filters served alone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "call_text.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

std::string group_registry() {
    return server_toml("alpha") + "\n" + server_toml("beta") + "\n" +
           server_toml("solo", {}, {{"tools", "[\"echo\", \"add\"]"}, {"exclude_tools", "[\"add\"]"}}) +
           R"(
[groups.dev]
servers = ["alpha", "beta"]
exclude_tools = ["crash", "stderr"]

[groups.dev.beta]
tools = ["echo", "add", "slow", "crash"]
)";
}

// Every tool name of the session's tools/list, following nextCursor to the end.
std::vector<std::string> tool_names(McpSession& session) {
    std::vector<std::string> names;
    json params = json::object();
    for (int page = 0; page < 50; ++page) {
        const McpMessage reply = session.wait_response(session.request("tools/list", params));
        REQUIRE(reply.json.contains("result"));
        for (const json& tool : reply.json["result"]["tools"]) names.push_back(tool["name"]);
        if (!reply.json["result"].contains("nextCursor")) return names;
        params = {{"cursor", reply.json["result"]["nextCursor"]}};
    }
    FAIL("tools/list did not end");
    return names;
}

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

TEST_CASE("a registry group gives one session the prefixed, filtered tools of its servers",
          "[group]") {
    TestEnv env("group-registry");
    env.write_registry(group_registry());
    env.start_daemon();
    McpSession session(env.socket(), "dev");
    const McpMessage init = session.initialize("group-agent");
    INFO(init.raw);
    CHECK(init.json["result"]["serverInfo"]["name"] == "dev");
    CHECK(init.json["result"]["capabilities"].contains("tools"));
    CHECK(init.json["result"]["capabilities"].contains("resources"));

    const std::vector<std::string> names = tool_names(session);
    INFO(json(names).dump());
    CHECK(has(names, "alpha__echo"));
    CHECK(has(names, "alpha__add"));
    CHECK(has(names, "beta__echo"));
    CHECK(has(names, "beta__slow"));
    CHECK_FALSE(has(names, "alpha__crash"));  // the group's exclude
    CHECK_FALSE(has(names, "beta__crash"));   // allowed by the member, excluded by the group
    CHECK_FALSE(has(names, "beta__large"));   // not in the member's allow list
    CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());

    CHECK(call_text(session, "alpha__echo", {{"text", "one"}}) == "one");
    CHECK(call_text(session, "beta__add", {{"a", 2}, {"b", 3}}) == "5");
    const McpMessage refused = session.wait_response(session.call_tool("beta__crash", json::object()));
    CHECK(refused.error_code() == -32602);
    CHECK(refused.json["error"]["message"] == "Unknown tool: beta__crash");
    CHECK(env.state("beta") == "running");  // nothing reached it

    // A resource is read through the member that lists it.
    const McpMessage read = session.wait_response(
        session.request("resources/read", {{"uri", "demo://static"}}));
    CHECK(read.json.contains("result"));

    // Each member is an ordinary session of its server; the group is one session in the list.
    const RunResult sessions = env.ctl({"--json", "sessions"});
    REQUIRE(sessions.exit_code == 0);
    const json list = json::parse(sessions.out)["sessions"];
    INFO(list.dump());
    REQUIRE(list.size() == 1);
    CHECK(list[0]["server"] == "dev");
    CHECK(list[0]["group"] == json{"alpha", "beta"});
    CHECK(list[0]["client"]["name"] == "group-agent");
    CHECK(env.server("alpha")["sessions"] == 1);
    CHECK(env.server("beta")["sessions"] == 1);

    // mcpd --check-config lists the group with its servers.
    const RunResult checked = run_process({bin("mcpd"), "--check-config", env.registry()});
    CHECK(checked.exit_code == 0);
    CHECK(checked.out.find("dev                  group of alpha, beta") != std::string::npos);
}

TEST_CASE("a member's restart: its items leave with list_changed and come back, the other "
          "member's call is not failed",
          "[group]") {
    TestEnv env("group-restart");
    env.write_registry(group_registry());
    env.start_daemon();
    McpSession session(env.socket(), "dev");
    session.initialize("agent");
    CHECK(has(tool_names(session), "beta__echo"));
    // A slow call on alpha goes on while beta restarts.
    const json slow = session.call_tool("alpha__slow", {{"steps", 15}, {"interval_ms", 100}});
    REQUIRE(env.ctl({"restart", "beta"}).exit_code == 0);
    const auto changed = session.wait_for(
        [](const McpMessage& m) { return m.method() == "notifications/tools/list_changed"; }, 10s);
    CHECK(changed.has_value());
    const McpMessage slow_reply = session.wait_response(slow);
    CHECK_FALSE(slow_reply.is_error());
    env.wait_state("beta", "running");
    wait_until("beta's tools are back", 10s, [&] { return has(tool_names(session), "beta__echo"); });
    CHECK(call_text(session, "beta__echo", {{"text", "back"}}) == "back");
}

TEST_CASE("mcpctl connect a b makes a group on the spot", "[group]") {
    TestEnv env("group-adhoc");
    env.write_registry(group_registry());
    env.start_daemon();
    PipedProcess agent({bin("mcpctl"), "--socket", env.socket(), "connect", "alpha", "beta"},
                       env.path("connect.err"));
    const McpMessage init = agent.session().initialize("adhoc-agent");
    INFO(init.raw);
    CHECK(init.json["result"]["serverInfo"]["name"] == "alpha+beta");
    const std::vector<std::string> names = tool_names(agent.session());
    CHECK(has(names, "alpha__crash"));  // no filters but the servers' own
    CHECK(has(names, "beta__large"));
    CHECK(call_text(agent.session(), "beta__echo", {{"text", "hi"}}) == "hi");

    // Progress of a call reaches this client with its own token.
    const json id = agent.session().call_tool("alpha__slow", {{"steps", 3}, {"interval_ms", 100}},
                                              {{"progressToken", "tok-1"}});
    const McpMessage reply = agent.session().wait_response(id);
    CHECK_FALSE(reply.is_error());
    for (const McpMessage& progress : agent.session().notifications("notifications/progress"))
        CHECK(progress.json["params"]["progressToken"] == "tok-1");

    const RunResult unknown =
        env.ctl({"connect", "alpha", "nosuch"});
    CHECK(unknown.exit_code == 1);
    CHECK(unknown.err.find("nosuch") != std::string::npos);
}

TEST_CASE("a server with filters shows its sessions only the tools they let through",
          "[group]") {
    TestEnv env("group-solo");
    env.write_registry(group_registry());
    env.start_daemon();
    McpSession session(env.socket(), "solo");
    const McpMessage init = session.initialize("agent");
    CHECK(init.json["result"]["serverInfo"]["name"] != "solo");  // the server's own answer
    CHECK(tool_names(session) == std::vector<std::string>{"echo"});
    CHECK(call_text(session, "echo", {{"text", "x"}}) == "x");
    const McpMessage refused = session.wait_response(session.call_tool("add", {{"a", 1}, {"b", 1}}));
    CHECK(refused.json["error"]["message"] == "Unknown tool: add");
}

TEST_CASE("a failed member is left out of the session, and status says so", "[group]") {
    TestEnv env("group-failed");
    env.write_registry(server_toml("alpha") + "\n" +
                       server_toml("broken", {}, {{"restart", "\"never\""}}, "/nonexistent/mcp-server") +
                       "\n[groups.mixed]\nservers = [\"alpha\", \"broken\"]\n");
    env.start_daemon();
    env.wait_state("broken", "failed");
    McpSession session(env.socket(), "mixed");
    const McpMessage init = session.initialize("agent");
    INFO(init.raw);
    CHECK(init.json["result"]["serverInfo"]["name"] == "mixed");
    const std::vector<std::string> names = tool_names(session);
    CHECK(has(names, "alpha__echo"));
    CHECK(std::none_of(names.begin(), names.end(),
                       [](const std::string& n) { return n.starts_with("broken__"); }));

    const json status = env.status_json();
    INFO(status.dump());
    REQUIRE(status.contains("groups"));
    const json& group = status["groups"][0];
    CHECK(group["name"] == "mixed");
    CHECK(group["sessions"] == 1);
    REQUIRE(group["left_out"].size() == 1);
    CHECK(group["left_out"][0]["server"] == "broken");
    CHECK(group["left_out"][0]["reason"].get<std::string>().find("failed") != std::string::npos);
    const RunResult text = env.ctl({"status"});
    CHECK(text.out.find("group mixed (alpha, broken): 1 sessions") != std::string::npos);
    CHECK(text.out.find("broken is left out of session") != std::string::npos);
}

TEST_CASE("modern and legacy members serve a 2026-07-28 client and a legacy one", "[group][modern]") {
    TestEnv env("group-eras");
    env.write_registry(server_toml("new", {"--era=dual", "--tick-ms=0"}) + "\n" +
                       server_toml("old", {"--era=legacy", "--tick-ms=0"}) +
                       "\n[groups.mixed]\nservers = [\"new\", \"old\"]\n");
    env.start_daemon();
    const json meta = modern_meta("modern-agent");

    // The 2026-07-28 client: no handshake, its _meta on every request.
    McpSession modern(env.socket(), "mixed");
    const McpMessage discovered = modern.wait_response(modern.request("server/discover", {{"_meta", meta}}));
    INFO(discovered.raw);
    REQUIRE(discovered.json.contains("result"));
    CHECK(discovered.json["result"]["supportedVersions"] == json{"2026-07-28"});
    CHECK(discovered.json["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mixed");
    const McpMessage tools = modern.wait_response(modern.request("tools/list", {{"_meta", meta}}));
    std::vector<std::string> names;
    json params = {{"_meta", meta}};
    for (json page = tools.json;;) {
        for (const json& tool : page["result"]["tools"]) names.push_back(tool["name"]);
        if (!page["result"].contains("nextCursor")) break;
        params["cursor"] = page["result"]["nextCursor"];
        page = modern.wait_response(modern.request("tools/list", params)).json;
    }
    INFO(json(names).dump());
    CHECK(has(names, "new__touch_tools"));  // the modern era's own tool
    CHECK(has(names, "old__echo"));
    const json with_meta = modern.call_tool("old__echo", {{"text", "o"}}, meta);
    CHECK(modern.wait_response(with_meta).tool_text() == "o");
    const json modern_echo = modern.call_tool("new__echo", {{"text", "n"}}, meta);
    CHECK(modern.wait_response(modern_echo).tool_text() == "n");

    // A listen stream: the modern member's list change arrives tagged with the client's id.
    modern.request_raw("\"stream-1\"", "subscriptions/listen",
                       {{"notifications", {{"toolsListChanged", true}}}, {"_meta", meta}});
    const auto ack = modern.wait_for([](const McpMessage& m) {
        return m.method() == "notifications/subscriptions/acknowledged";
    }, 10s);
    REQUIRE(ack.has_value());
    CHECK(ack->json["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "stream-1");
    const json touch = modern.call_tool("new__touch_tools", json::object(), meta);
    modern.wait_response(touch);
    const auto changed = modern.wait_for([](const McpMessage& m) {
        return m.method() == "notifications/tools/list_changed";
    }, 10s);
    REQUIRE(changed.has_value());
    CHECK(changed->json["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "stream-1");

    // A legacy client of the same group at once: the dual-era member serves it on a legacy
    // process of its own.
    McpSession legacy(env.socket(), "mixed");
    const McpMessage init = legacy.initialize("legacy-agent");
    INFO(init.raw);
    CHECK(init.json["result"]["serverInfo"]["name"] == "mixed");
    CHECK(call_text(legacy, "new__echo", {{"text", "l1"}}) == "l1");
    CHECK(call_text(legacy, "old__echo", {{"text", "l2"}}) == "l2");
}
