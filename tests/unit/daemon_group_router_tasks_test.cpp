// The group router and tasks (docs/GROUPS.md, Tasks): a group declares none, so what it sends
// a member asks for none, and tools that run only as tasks are not shown; a server served
// alone keeps its tasks.
#include <catch2/catch.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/mux/group_router.h"
#include "recording_group_env.h"

using namespace mcpd;
using nlohmann::json;

namespace {

using TaskGroupEnv = testing::RecordingGroupEnv;

GroupSpec task_group(bool prefix = true) {
    GroupSpec spec;
    spec.name = prefix ? "work" : "tasker";
    spec.prefix = prefix;
    spec.members = {{"tasker", {}, {}, {}}};
    if (prefix) spec.members.push_back({"plain", {}, {}, {}});
    return spec;
}

std::string member_result(const json& request, const json& result) {
    return json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}}.dump();
}

void initialize_task_group(GroupRouter& router, TaskGroupEnv& env, std::size_t members) {
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})");
    for (std::size_t i = 0; i < members; ++i) {
        const json caps = {{"tools", json::object()},
                           {"tasks", {{"requests", {{"tools", {{"call", json::object()}}}}}}}};
        router.on_member_line(
            i, member_result(env.take(i), {{"protocolVersion", "2025-11-25"},
                                           {"capabilities", caps},
                                           {"serverInfo", {{"name", "s"}, {"version", "1"}}}}));
    }
    env.client.clear();
}

const json kTaskTools = {{"tools",
                          {{{"name", "slow"},
                            {"inputSchema", {{"type", "object"}}},
                            {"execution", {{"taskSupport", "optional"}}}},
                           {{"name", "only_task"},
                            {"inputSchema", {{"type", "object"}}},
                            {"execution", {{"taskSupport", "required"}}}},
                           {{"name", "echo"}, {"inputSchema", {{"type", "object"}}}}}}};

}  // namespace

TEST_CASE("a group declares no tasks and takes params.task out of what it forwards",
          "[group][tasks]") {
    TaskGroupEnv env;
    GroupRouter router(task_group(), env, 1);
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})");
    const json caps = {
        {"tools", json::object()},
        {"tasks",
         {{"list", json::object()}, {"requests", {{"tools", {{"call", json::object()}}}}}}}};
    for (std::size_t i = 0; i < 2; ++i) {
        router.on_member_line(
            i, member_result(env.take(i), {{"protocolVersion", "2025-11-25"},
                                           {"capabilities", caps},
                                           {"serverInfo", {{"name", "s"}, {"version", "1"}}}}));
    }
    CHECK_FALSE(env.last_client()["result"]["capabilities"].contains("tasks"));

    router.on_client_line(
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tasker__slow","arguments":{},"task":{"ttl":60000},"_meta":{"progressToken":"p"}}})");
    const json sent = env.take(0);
    CHECK(sent["params"]["name"] == "slow");
    CHECK_FALSE(sent["params"].contains("task"));
    CHECK(sent["params"]["_meta"]["progressToken"] == "p");  // the rest is as it came

    router.on_client_line(
        R"({"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t-1"}})");
    CHECK(env.last_client()["error"]["code"] == -32601);
}

TEST_CASE("a group hides the tools that run only as tasks, and refuses calls of them",
          "[group][tasks]") {
    TaskGroupEnv env;
    GroupRouter router(task_group(), env, 1);
    initialize_task_group(router, env, 2);
    router.on_client_line(R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})");
    router.on_member_line(0, member_result(env.take(0), kTaskTools));
    json names = json::array();
    const json page = env.last_client();  // named: a range over a temporary's member dangles
    for (const json& tool : page["result"]["tools"]) names.push_back(tool["name"]);
    CHECK(names == json{"tasker__slow", "tasker__echo"});

    router.on_client_line(
        R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"tasker__only_task","task":{}}})");
    CHECK(env.members[0].empty());
    CHECK(env.last_client()["error"]["code"] == -32602);
    CHECK(env.last_client()["error"]["message"] == "Unknown tool: tasker__only_task");
}

TEST_CASE("a group takes the tasks extension out of a 2026-07-28 client's capabilities",
          "[group][tasks][modern]") {
    TaskGroupEnv env;
    GroupRouter router(task_group(), env, 1);
    const json meta = {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                       {"io.modelcontextprotocol/clientCapabilities",
                        {{"extensions",
                          {{"io.modelcontextprotocol/tasks", json::object()},
                           {"x-vendor/other", json::object()}}}}}};
    router.on_client_line(json{
        {"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}, {"params", {{"_meta", meta}}}}
                              .dump());
    for (std::size_t i = 0; i < 2; ++i) {
        const json discover = env.take(i);
        const json& sent_caps =
            discover["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        CHECK_FALSE(sent_caps["extensions"].contains("io.modelcontextprotocol/tasks"));
        CHECK(sent_caps["extensions"].contains("x-vendor/other"));
        router.on_member_line(
            i, member_result(discover, {{"supportedVersions", {"2026-07-28"}},
                                        {"capabilities", {{"tools", json::object()}}},
                                        {"resultType", "complete"}}));
    }
    router.on_client_line(json{{"jsonrpc", "2.0"},
                               {"id", 2},
                               {"method", "tools/call"},
                               {"params", {{"name", "tasker__slow"}, {"_meta", meta}}}}
                              .dump());
    const json call = env.take(0);
    const json& call_caps = call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
    CHECK_FALSE(call_caps["extensions"].contains("io.modelcontextprotocol/tasks"));
    CHECK(call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
}

TEST_CASE("a server with filters served alone keeps its tasks", "[group][tasks]") {
    TaskGroupEnv env;
    GroupRouter router(task_group(false), env, 1);
    initialize_task_group(router, env, 1);
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","task":{"ttl":1}}})");
    CHECK(env.take(0)["params"]["task"] == json{{"ttl", 1}});
    router.on_client_line(R"({"jsonrpc":"2.0","id":6,"method":"tools/list"})");
    router.on_member_line(0, member_result(env.take(0), kTaskTools));
    CHECK(env.last_client()["result"]["tools"].size() == 3);
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"t-1"}})");
    CHECK(env.take(0)["method"] == "tasks/get");
}
