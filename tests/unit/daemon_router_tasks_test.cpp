// Router: tasks (docs/MULTIPLEXING.md, "Both eras", tasks and progress; "Legacy children",
// related-task routing of requests and notifications): a task belongs to the session whose
// request created it.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

const json kCapabilities = {{"sampling", json::object()}, {"elicitation", json::object()}};

std::string create_task_result_polled(const std::string& task_id_json) {
    return R"({"task":{"taskId":)" + task_id_json +
           R"(,"status":"working","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:00:00Z","ttl":60000,"pollInterval":500}})";
}

// Session 1 owns task "t-1"; session 2 owns nothing.
struct Tasks : RouterHarness {
    explicit Tasks(const std::string& task_id_json = R"("t-1")") {
        child_ready();
        connect(1, "2025-11-25", kCapabilities);
        connect(2, "2025-11-25", kCapabilities);
        env.next_child_id = 100;
        created = forward(
            1,
            R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"long","arguments":{},"task":{"ttl":60000},"_meta":{"progressToken":"p"}}})");
        answer(created, create_task_result_polled(task_id_json));
        CHECK(only_line_to(1) == R"({"jsonrpc":"2.0","id":"c","result":)" +
                                     create_task_result_polled(task_id_json) + "}");
    }
    std::string created;  // the task-augmented request as the child saw it
};

}  // namespace

TEST_CASE("router: another session cannot reach a task", "[router]") {
    Tasks h;
    for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
        h.send(2, task_request(R"("q")", method, R"("t-1")"));
        const std::string reply = h.only_line_to(2);
        CHECK(error_code_of(reply) == -32602);
        CHECK(raw_id_of(reply) == R"("q")");
        // Nor can the owner name a task that does not exist.
        h.send(1, task_request("9", method, R"("t-2")"));
        CHECK(error_code_of(h.only_line_to(1)) == -32602);
    }
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: the owner's task requests are forwarded", "[router]") {
    Tasks h;
    for (const char* method : {"tasks/get", "tasks/result", "tasks/cancel"}) {
        const std::string at_child = h.forward(1, task_request(R"("q")", method, R"("t-1")"));
        CHECK(at_child == task_request(raw_id_of(at_child), method, R"("t-1")"));
        CHECK(raw_id_of(at_child) != R"("q")");
        h.answer(at_child, R"({"taskId":"t-1","status":"working"})");
        CHECK(h.only_line_to(1) ==
              R"({"jsonrpc":"2.0","id":"q","result":{"taskId":"t-1","status":"working"}})");
    }
}

TEST_CASE("router: task status notifications go to the owner only", "[router]") {
    Tasks h;
    const std::string status =
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"completed","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:01:00Z","ttl":60000}})";
    h.from_child(status);
    CHECK(h.only_line_to(1) == status);
    CHECK(h.env.sent_to(2).empty());
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-unknown","status":"failed"}})");
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: a child request linked to a task goes to the task's owner", "[router]") {
    Tasks h;
    // Both sessions busy: without the link the request could not be attributed.
    h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})");
    h.forward(2, R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})");
    const std::string request =
        R"({"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"sure?","requestedSchema":{"type":"object"},)" +
        related(R"("t-1")") + "}}";
    h.from_child(request);
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(2).empty());
    const std::string at_session = h.only_line_to(1);
    const std::string session_id = raw_id_of(at_session);
    CHECK(
        at_session ==
        R"({"jsonrpc":"2.0","id":)" + session_id +
            R"(,"method":"elicitation/create","params":{"message":"sure?","requestedSchema":{"type":"object"},)" +
            related(R"("t-1")") + "}}");
    h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id +
                  R"(,"result":{"action":"accept","content":{}}})");
    CHECK(h.only_child_line() ==
          R"({"jsonrpc":"2.0","id":"e1","result":{"action":"accept","content":{}}})");
}

TEST_CASE("router: a task id with escapes still links a child request to its owner", "[router]") {
    // The task id is compared as a JSON string value, not as its escaped bytes.
    Tasks h(R"("t\"1")");
    // Nobody has requests at the child: only the task link can attribute this one.
    h.from_child(
        R"({"jsonrpc":"2.0","id":"s","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1,)" +
        related(R"("t\"1")") + "}}");
    CHECK(h.env.sent_to(1).size() == 1);
    CHECK(h.env.child_lines.empty());
    // The owner can also name it in tasks/get.
    h.env.clear_records();
    h.send(1, task_request("2", "tasks/get", R"("t\"1")"));
    CHECK(h.env.child_lines.size() == 1);
}

TEST_CASE("router: an unknown child notification linked to a task goes to its owner only",
          "[router]") {
    // Legacy notifications are connection-wide unless they carry a known correlator
    // (progressToken, related-task, subscriptionId).
    Tasks h;
    const std::string note =
        R"({"jsonrpc":"2.0","method":"x-vendor/task-log","params":{"line":"step 2",)" +
        related(R"("t-1")") + "}}";
    h.from_child(note);
    CHECK(h.only_line_to(1) == note);
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: log messages and resource updates linked to a task go to its owner only",
          "[router]") {
    // The correlator wins over the method's usual audience (every session for a log line,
    // subscribers for an update).
    Tasks h;
    const std::string log_line =
        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"step 2",)" +
        related(R"("t-1")") + "}}";
    h.from_child(log_line);
    CHECK(h.only_line_to(1) == log_line);
    CHECK(h.env.sent_to(2).empty());
    // One about a task nobody owns reaches nobody.
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x",)" +
                 related(R"("t-9")") + "}}");
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: progress on a task outlives the CreateTaskResult", "[router]") {
    // Progress token lifetime: keep the token of a task-augmented request until the task is
    // terminal (docs/MULTIPLEXING.md, "Both eras", progress).
    Tasks h;
    const std::string own = raw_progress_token_of(h.created);
    const std::string progress_prefix =
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)";
    h.from_child(progress_prefix + own + R"(,"progress":2,"total":4}})");
    CHECK(h.only_line_to(1) == progress_prefix + R"("p","progress":2,"total":4}})");
    CHECK(h.env.sent_to(2).empty());

    SECTION("until tasks/result is answered") {
        h.answer(h.forward(1, task_request("5", "tasks/result", R"("t-1")")), R"({"content":[]})");
        h.env.session_lines.clear();
        h.from_child(progress_prefix + own + R"(,"progress":4,"total":4}})");
        CHECK(h.env.sent_to(1).empty());
    }
    SECTION("until its owner leaves") {
        h.router.detach(1);
        h.from_child(progress_prefix + own + R"(,"progress":4,"total":4}})");
        CHECK(h.env.sent_to(1).empty());
        CHECK(h.env.sent_to(2).empty());
    }
}

TEST_CASE("router: a departed owner's tasks are forgotten", "[router]") {
    Tasks h;
    h.router.detach(1);
    h.env.clear_records();
    h.send(2, task_request("1", "tasks/get", R"("t-1")"));
    CHECK(error_code_of(h.only_line_to(2)) == -32602);
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"cancelled"}})");
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a 2026-style task result also records the owner", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.connect(2);
    const std::string at_child =
        h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long"}})");
    h.answer(at_child, R"({"resultType":"task","taskId":"t-9","status":"working"})");
    h.env.clear_records();
    h.send(2, task_request("2", "tasks/get", R"("t-9")"));
    CHECK(error_code_of(h.only_line_to(2)) == -32602);
    CHECK(h.env.child_lines.empty());
    h.forward(1, task_request("2", "tasks/get", R"("t-9")"));
}

TEST_CASE("router: a task's progress ends at its terminal status", "[router]") {
    Tasks h;
    const std::string token = raw_progress_token_of(h.created);
    const std::string progress = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                                 token + R"(,"progress":1}})";
    h.from_child(progress);
    CHECK(parse(h.only_line_to(1))["params"]["progressToken"] == "p");
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"completed","createdAt":"2025-11-25T10:00:00Z","lastUpdatedAt":"2025-11-25T10:01:00Z","ttl":60000}})");
    h.env.session_lines.clear();
    h.from_child(progress);
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    // The owner still fetches the ended task.
    const std::string at_child = h.forward(1, task_request(R"("r")", "tasks/result", R"("t-1")"));
    CHECK(raw_id_of(at_child) != R"("r")");
}

TEST_CASE("router: a session keeps the ended tasks it may fetch within a bound", "[router]") {
    Tasks h;
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-1","status":"completed"}})");
    for (std::size_t i = 0; i < Router::kMaxEndedTasks; ++i) {
        const std::string id = "\"n-" + std::to_string(i) + "\"";
        const std::string call = h.forward(
            1, R"({"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":"long","task":{}}})");
        h.answer(call, create_task_result_polled(id));
        h.from_child(R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":)" +
                     id + R"(,"status":"completed"}})");
    }
    h.env.session_lines.clear();
    // The oldest ended task is forgotten; the newest are still the owner's.
    h.send(1, task_request("1", "tasks/get", R"("t-1")"));
    CHECK(error_code_of(h.only_line_to(1)) == -32602);
    const std::string newest = "\"n-" + std::to_string(Router::kMaxEndedTasks - 1) + "\"";
    const std::string at_child = h.forward(1, task_request("2", "tasks/get", newest));
    CHECK(raw_id_of(at_child) != "2");
}
