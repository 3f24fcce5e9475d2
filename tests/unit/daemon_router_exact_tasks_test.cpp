// Router: a task's log lines go to its owner at the owner's level, and tasks/list lists the
// asking session's tasks only (2025-11-25).
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using Catch::Matchers::Contains;

namespace {

std::string create_task_result_for(const std::string& task_id) {
    std::string result = R"({"task":{"taskId":")";
    result += task_id;
    result +=
        R"(","status":"working","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:00:00Z","ttl":60000}})";
    return result;
}

std::string task_log(const std::string& level, const std::string& task_id) {
    std::string line = R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":")";
    line += level;
    line += R"(","data":"step","_meta":{"io.modelcontextprotocol/related-task":{"taskId":")";
    line += task_id;
    line += R"("}}}})";
    return line;
}

std::string tools_call(const std::string& id, bool task) {
    std::string line = R"({"jsonrpc":"2.0","id":)";
    line += id;
    line += R"(,"method":"tools/call","params":{"name":"long")";
    if (task) line += R"(,"task":{"ttl":60000})";
    line += "}}";
    return line;
}

// Sessions 1 and 2 on a legacy child whose initialize result is `result`; session 1 owns
// "t-1", session 2 owns "t-2".
struct LegacyTasks : RouterHarness {
    explicit LegacyTasks(const json& result = demo_initialize_result()) {
        router.on_child_ready(result, "2025-11-25");
        connect(1);
        connect(2);
        env.next_child_id = 100;
        answer(forward(1, tools_call(R"("c1")", true)), create_task_result_for("t-1"));
        answer(forward(2, tools_call(R"("c2")", true)), create_task_result_for("t-2"));
        env.clear_records();
    }
};

const std::string kTasksList = R"({"jsonrpc":"2.0","id":"l","method":"tasks/list","params":{}})";

}  // namespace

// ---- task-linked log lines ----

TEST_CASE("router exact: a task's log line reaches its owner only at the owner's level",
          "[router][exact]") {
    LegacyTasks h;
    h.answer(h.forward(
        1, R"({"jsonrpc":"2.0","id":9,"method":"logging/setLevel","params":{"level":"error"}})"));
    h.env.clear_records();

    h.from_child(task_log("info", "t-1"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());

    h.from_child(task_log("critical", "t-1"));
    CHECK(h.only_line_to(1) == task_log("critical", "t-1"));
    CHECK(h.env.sent_to(2).empty());

    // The other owner never set a level: it hears everything about its own task.
    h.from_child(task_log("debug", "t-2"));
    CHECK(h.only_line_to(2) == task_log("debug", "t-2"));
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE(
    "router exact: on a modern child a task's log line goes to its owner and not the busy one",
    "[router][exact]") {
    RouterHarness h;
    h.router.on_child_ready(json{{"supportedVersions", {"2026-07-28"}}}, "2026-07-28", true);
    h.router.attach(1);
    h.router.attach(2);
    h.answer(h.forward(1, tools_call("1", false)),
             R"({"resultType":"task","taskId":"t-9","status":"working"})");
    h.forward(2, tools_call("2", false));  // the only session with a request in flight
    h.env.clear_records();

    h.from_child(task_log("info", "t-9"));
    CHECK(h.only_line_to(1) == task_log("info", "t-9"));
    CHECK(h.env.sent_to(2).empty());

    // A task nobody owns: nobody, however sure the busy guess looks.
    h.from_child(task_log("info", "t-unknown"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router exact: a log line of a task whose owner left reaches nobody", "[router][exact]") {
    LegacyTasks h;
    h.forward(2, tools_call("5", false));
    h.router.detach(1);
    h.env.clear_records();
    h.from_child(task_log("emergency", "t-1"));
    CHECK(h.env.sent_to(2).empty());
}

// ---- tasks/list ----

TEST_CASE("router exact: tasks/list on a child without task listing is method not found",
          "[router][exact]") {
    json result = demo_initialize_result();
    result["capabilities"]["tasks"].erase("list");
    LegacyTasks h(result);
    h.send(1, kTasksList);
    const std::string reply = h.only_line_to(1);
    CHECK(raw_id_of(reply) == R"("l")");
    CHECK(error_code_of(reply) == -32601);
    CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(), Contains("no task listing"));
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router exact: tasks/list on a child without a tasks capability is method not found",
          "[router][exact]") {
    json result = demo_initialize_result();
    result["capabilities"].erase("tasks");
    RouterHarness h;
    h.router.on_child_ready(result, "2025-11-25");
    h.connect(1);
    h.send(1, kTasksList);
    CHECK(error_code_of(h.only_line_to(1)) == -32601);
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router exact: tasks/list is forwarded and answered with the session's own tasks",
          "[router][exact]") {
    LegacyTasks h;
    const std::string at_child = h.forward(
        1, R"({"jsonrpc":"2.0","id":"l","method":"tasks/list","params":{"cursor":"page-2"}})");
    CHECK(raw_id_of(at_child) != R"("l")");
    CHECK(parse(at_child)["params"]["cursor"] == "page-2");

    h.answer(
        at_child,
        R"({"tasks":[{"taskId":"t-2","status":"working"},{"taskId":"t-1","status":"completed"},{"taskId":"t-x","status":"working"},{"status":"working"}],"nextCursor":"page-3"})");
    const std::string reply = h.only_line_to(1);
    CHECK(raw_id_of(reply) == R"("l")");
    CHECK(
        parse(reply)["result"] ==
        json::parse(R"({"tasks":[{"taskId":"t-1","status":"completed"}],"nextCursor":"page-3"})"));
    CHECK(h.env.sent_to(2).empty());

    // Session 2 sees only its own in the same listing.
    h.answer(
        h.forward(2, kTasksList),
        R"({"tasks":[{"taskId":"t-1","status":"working"},{"taskId":"t-2","status":"working"}]})");
    CHECK(parse(h.only_line_to(2))["result"] ==
          json::parse(R"({"tasks":[{"taskId":"t-2","status":"working"}]})"));
}

TEST_CASE("router exact: a page with none of the session's tasks keeps its cursor",
          "[router][exact]") {
    LegacyTasks h;
    h.answer(h.forward(1, kTasksList),
             R"({"tasks":[{"taskId":"t-2","status":"working"}],"nextCursor":""})");
    CHECK(parse(h.only_line_to(1))["result"] == json::parse(R"({"tasks":[],"nextCursor":""})"));
}

TEST_CASE("router exact: the child's error to tasks/list is passed on", "[router][exact]") {
    LegacyTasks h;
    h.answer_error(h.forward(1, kTasksList), -32602, "bad cursor");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","id":"l","error":{"code":-32602,"message":"bad cursor"}})");
}
