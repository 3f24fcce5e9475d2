// Tasks through a group (docs/GROUPS.md, Tasks): a group declares no tasks, so what it sends a
// member asks for none and the client gets the result itself, never a task it could not
// poll; a tool that runs only as a task is not shown. A server served alone keeps its tasks.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

std::vector<std::string> first_page_tool_names(McpSession& session,
                                               const json& params = json::object()) {
    const McpMessage reply = session.wait_response(session.request("tools/list", params));
    INFO(reply.raw);
    REQUIRE(reply.json.contains("result"));
    std::vector<std::string> names;
    for (const json& tool : reply.json["result"]["tools"]) names.push_back(tool["name"]);
    return names;
}

bool lists(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// initialize at 2025-11-25, the revision with tasks; its result.
json initialize_with_tasks(McpSession& session) {
    const McpMessage reply = session.wait_response(session.request(
        "initialize", {{"protocolVersion", "2025-11-25"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "task-agent"}, {"version", "1"}}}}));
    INFO(reply.raw);
    REQUIRE(reply.json.contains("result"));
    CHECK(reply.json["result"].value("protocolVersion", "") == "2025-11-25");
    session.notify("notifications/initialized");
    return reply.json["result"];
}

json task_call(McpSession& session, const std::string& tool, const json& arguments) {
    return session.request("tools/call",
                           {{"name", tool}, {"arguments", arguments}, {"task", {{"ttl", 60000}}}});
}

}  // namespace

TEST_CASE("a 2025-11-25 client of a group gets results, not tasks, and no task-only tool",
          "[group][tasks]") {
    TestEnv env("group-tasks");
    env.write_registry(server_toml("tasker", {"--task-tools", "--tick-ms=0"}) + "\n" +
                       server_toml("plain", {"--tick-ms=0"}) +
                       "\n[groups.work]\nservers = [\"tasker\", \"plain\"]\n");
    env.start_daemon();

    // The server itself, alone, offers tasks (so what follows is the group's doing).
    McpSession alone(env.socket(), "tasker");
    CHECK(initialize_with_tasks(alone)["capabilities"].contains("tasks"));
    CHECK(lists(first_page_tool_names(alone), "task_only"));
    const McpMessage created =
        alone.wait_response(task_call(alone, "slow", {{"steps", 1}, {"interval_ms", 10}}));
    INFO(created.raw);
    CHECK(created.json.value("result", json::object()).contains("task"));

    McpSession session(env.socket(), "work");
    CHECK_FALSE(initialize_with_tasks(session)["capabilities"].contains("tasks"));

    const std::vector<std::string> names = first_page_tool_names(session);
    INFO(json(names).dump());
    CHECK(lists(names, "tasker__slow"));
    CHECK_FALSE(lists(names, "tasker__task_only"));  // it could never be called here
    const McpMessage hidden =
        session.wait_response(session.call_tool("tasker__task_only", json::object()));
    CHECK(hidden.error_code() == -32602);
    CHECK(hidden.json.value("error", json::object()).value("message", "") ==
          "Unknown tool: tasker__task_only");

    // A call the client asked to run as a task runs to its result.
    const McpMessage reply = session.wait_response(
        task_call(session, "tasker__slow", {{"steps", 1}, {"interval_ms", 10}}));
    INFO(reply.raw);
    REQUIRE(reply.json.contains("result"));
    CHECK_FALSE(reply.json["result"].contains("task"));
    CHECK(reply.tool_text() == "done after 1 steps");
}

TEST_CASE("a 2026-07-28 client of a group declaring the tasks extension gets results, not tasks",
          "[group][tasks][modern]") {
    TestEnv env("group-tasks-modern");
    env.write_registry(server_toml("fresh", {"--era=modern", "--tick-ms=0"}) + "\n" +
                       server_toml("plain", {"--tick-ms=0"}) +
                       "\n[groups.work]\nservers = [\"fresh\", \"plain\"]\n");
    env.start_daemon();
    const json meta = {
        {"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
        {"io.modelcontextprotocol/clientCapabilities",
         {{"extensions", {{"io.modelcontextprotocol/tasks", json::object()}}}}},
        {"io.modelcontextprotocol/clientInfo", {{"name", "modern-agent"}, {"version", "1"}}}};
    McpSession session(env.socket(), "work");
    const McpMessage discovered =
        session.wait_response(session.request("server/discover", {{"_meta", meta}}));
    INFO(discovered.raw);
    REQUIRE(discovered.json.contains("result"));
    const json capabilities = discovered.json["result"].value("capabilities", json::object());
    CHECK_FALSE(capabilities.contains("tasks"));
    CHECK_FALSE(capabilities.contains("extensions"));

    const McpMessage reply = session.wait_response(
        session.call_tool("fresh__slow", {{"steps", 1}, {"interval_ms", 10}}, meta));
    INFO(reply.raw);
    REQUIRE(reply.json.contains("result"));
    CHECK(reply.json["result"].value("resultType", "") != "task");
    CHECK(reply.tool_text() == "done after 1 steps");
}
