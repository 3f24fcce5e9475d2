// Router, modern child: requests mcpd answers, trims or routes by itself (docs/MULTIPLEXING.md,
// "Modern children (2026-07-28)"; "Both eras", tasks):
// server/discover from the cached DiscoverResult, tasks/list trimmed to the caller's tasks,
// notifications/message and progress.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

// A modern child answering server/discover with `discover`; sessions 1 and 2, child ids from 100.
struct Modern : RouterHarness {
    explicit Modern(const json& discover = demo_discover_result()) {
        modern_child_ready(discover);
        router.attach(1);
        router.attach(2);
        env.clear_records();
        env.next_child_id = 100;
    }

    // Session `id` gets the task `task` from a tools/call the child answered with it.
    void own_task(SessionId id, const std::string& task) {
        const std::string call =
            forward(id, modern_request(R"("c-)" + task + R"(")", "tools/call", R"("name":"slow")"));
        answer(call, R"({"resultType":"task","taskId":")" + task + R"(","status":"working"})");
        env.session_lines.clear();
    }
};

json cacheable(const std::string& scope, const json& ttl_ms,
               const std::string& instructions = "v1") {
    json extra = {{"cacheScope", scope}, {"instructions", instructions}};
    if (!ttl_ms.is_null()) extra["ttlMs"] = ttl_ms;
    return demo_discover_result(extra);
}

}  // namespace

TEST_CASE("router modern: server/discover is answered from a public DiscoverResult within its ttl",
          "[router][modern]") {
    const json discover = cacheable("public", 60000);
    Modern h(discover);
    const std::string id = GENERATE(std::string("1"), std::string(R"("d-1")"));
    h.send(1, modern_request(id, "server/discover"));
    CHECK(h.env.child_lines.empty());
    const json reply = parse(h.only_line_to(1));
    CHECK(reply["id"].dump() == id);
    CHECK(reply["result"] == discover);
    CHECK(h.env.sent_to(2).empty());

    // Just before the ttl runs out it is still served; then the child answers again.
    h.env.advance(59999ms);
    h.send(2, modern_request("7", "server/discover"));
    CHECK(h.env.child_lines.empty());
    CHECK(parse(h.only_line_to(2))["result"] == discover);
    h.env.advance(1ms);
    const std::string at_child = h.forward(2, modern_request("8", "server/discover"));
    CHECK(at_child == modern_request("100", "server/discover"));

    // The child's answer goes to the session that asked and becomes the cached one.
    const json fresh = cacheable("public", 1000, "v2");
    h.answer(at_child, fresh.dump());
    const json answered = parse(h.only_line_to(2));
    CHECK(answered["id"] == 8);
    CHECK(answered["result"] == fresh);
    h.env.advance(999ms);
    h.send(1, modern_request("9", "server/discover"));
    CHECK(h.env.child_lines.empty());
    CHECK(parse(h.only_line_to(1))["result"]["instructions"] == "v2");
    h.env.advance(1ms);
    h.forward(1, modern_request("10", "server/discover"));
}

TEST_CASE("router modern: server/discover goes to the child when its result may not be shared",
          "[router][modern]") {
    const json discover =
        GENERATE(cacheable("private", 60000), cacheable("public", 0), cacheable("public", nullptr),
                 cacheable("public", -5), cacheable("public", "60000"), demo_discover_result());
    Modern h(discover);
    const std::string at_child = h.forward(1, modern_request(R"("x")", "server/discover"));
    CHECK(at_child == modern_request("100", "server/discover"));
    CHECK(h.env.sent_to(1).empty());
    h.answer(at_child, discover.dump());
    CHECK(parse(h.only_line_to(1))["id"] == "x");
}

TEST_CASE("router modern: the cached DiscoverResult goes with the child", "[router][modern]") {
    Modern h(cacheable("public", 60000));
    h.router.on_child_gone("restarting");
    // The next process may not be the same server: what it says is all that counts.
    SECTION("its own result, shareable, is served") {
        h.modern_child_ready(cacheable("public", 60000, "new"));
        h.send(1, modern_request("1", "server/discover"));
        CHECK(parse(h.only_line_to(1))["result"]["instructions"] == "new");
    }
    SECTION("its own result, private, is not; nor the old one") {
        h.modern_child_ready(cacheable("private", 60000, "new"));
        h.env.child_lines.clear();
        h.forward(1, modern_request("1", "server/discover"));
        CHECK(h.env.sent_to(1).empty());
    }
    SECTION("a legacy process never serves it") {
        h.child_ready();
        h.env.clear_records();
        h.send(1, modern_request("1", "server/discover"));
        CHECK(error_code_of(h.only_line_to(1)) == -32601);
    }
}

TEST_CASE("router modern: tasks/list is trimmed to the caller's own tasks", "[router][modern]") {
    json discover = demo_discover_result();
    SECTION("tasks as the 2026 extension") {
        discover["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"] = json::object();
    }
    SECTION("tasks declared the 2025-11-25 way") {
        discover["capabilities"]["tasks"] = {{"list", json::object()}};
    }
    Modern h(discover);
    h.own_task(1, "t-1");
    h.own_task(2, "t-2");
    h.own_task(1, "t-3");
    h.env.next_child_id = 200;

    const std::string request = modern_request("5", "tasks/list", R"("cursor":"page-2")");
    const std::string at_child = h.forward(1, request);
    CHECK(at_child == modern_request("200", "tasks/list", R"("cursor":"page-2")"));

    const std::string task_1 = R"({"taskId":"t-1","status":"working"})";
    const std::string task_2 = R"({"taskId":"t-2","status":"completed"})";
    const std::string task_3 = R"({ "status":"failed", "taskId":"t\u002d3" })";
    const std::string unknown = R"({"taskId":"t-9","status":"working"})";
    h.from_child(R"({"jsonrpc":"2.0","id":200,"result":{"resultType":"complete","tasks":[)" +
                 task_2 + "," + task_1 + " , " + unknown + "," + task_3 +
                 R"(],"nextCursor":"page\/3","_meta":{"x":1}}})");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","id":5,"result":{"resultType":"complete","tasks":[)" + task_1 + "," +
              task_3 + R"(],"nextCursor":"page\/3","_meta":{"x":1}}})");
    CHECK(h.env.sent_to(2).empty());

    // Nothing of its own: an empty page, the cursor still passed on.
    h.forward(2, modern_request("6", "tasks/list"));
    h.from_child(R"({"jsonrpc":"2.0","id":201,"result":{"tasks":[)" + task_1 +
                 R"(],"nextCursor":""}})");
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":6,"result":{"tasks":[],"nextCursor":""}})");

    // An error passes as it is.
    h.forward(2, modern_request("7", "tasks/list", R"("cursor":"bad")"));
    h.from_child(R"({"jsonrpc":"2.0","id":202,"error":{"code":-32602,"message":"bad cursor"}})");
    CHECK(h.only_line_to(2) ==
          R"({"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad cursor"}})");
}

TEST_CASE("router modern: tasks/list without a tasks capability is -32601, not forwarded",
          "[router][modern]") {
    Modern h;
    h.send(1, modern_request(R"("l")", "tasks/list"));
    CHECK(h.env.child_lines.empty());
    const std::string reply = h.only_line_to(1);
    CHECK(error_code_of(reply) == -32601);
    CHECK(raw_id_of(reply) == R"("l")");
}

TEST_CASE("router modern: notifications/message reaches the one session waiting for an answer",
          "[router][modern]") {
    Modern h;
    const std::string log =
        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})";
    // An open stream is not a request waiting for its answer.
    h.forward(2, modern_request("1", "subscriptions/listen", R"("notifications":{})"));
    SECTION("nobody busy: dropped") {
        h.from_child(log);
        CHECK(h.env.sent_to(1).empty());
        CHECK(h.env.sent_to(2).empty());
    }
    SECTION("one session busy: it alone") {
        h.forward(1, modern_request("2", "tools/call", R"("name":"slow")"));
        h.from_child(log);
        CHECK(h.only_line_to(1) == log);
        CHECK(h.env.sent_to(2).empty());
    }
    SECTION("two sessions busy: nobody can be told apart") {
        h.forward(1, modern_request("2", "tools/call", R"("name":"slow")"));
        h.forward(2, modern_request("3", "tools/call", R"("name":"slow")"));
        h.from_child(log);
        CHECK(h.env.sent_to(1).empty());
        CHECK(h.env.sent_to(2).empty());
    }
}

TEST_CASE("router modern: progress goes to its session with its own token", "[router][modern]") {
    Modern h;
    auto call = [](const std::string& id, const std::string& token) {
        return R"({"jsonrpc":"2.0","id":)" + id +
               R"(,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":)" +
               token +
               R"(,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";
    };
    // Both sessions use the same id and token, as SDK clients do.
    const std::string at_child_1 = h.forward(1, call("1", "1"));
    const std::string at_child_2 = h.forward(2, call("1", R"("1")"));
    const std::string token_1 = raw_progress_token_of(at_child_1);
    const std::string token_2 = raw_progress_token_of(at_child_2);
    CHECK(token_1 != token_2);
    CHECK(at_child_1 == call("100", token_1));

    auto progress = [](const std::string& token, int done) {
        return R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
               token + R"(,"progress":)" + std::to_string(done) + R"(,"total":10}})";
    };
    h.from_child(progress(token_2, 3));
    CHECK(h.only_line_to(2) == progress(R"("1")", 3));
    CHECK(h.env.sent_to(1).empty());
    h.from_child(progress(token_1, 4));
    CHECK(h.only_line_to(1) == progress("1", 4));
    CHECK(h.env.sent_to(2).empty());

    // Answered: its token is released.
    h.answer(at_child_1, R"({"resultType":"complete","content":[]})");
    CHECK(raw_id_of(h.only_line_to(1)) == "1");
    h.from_child(progress(token_1, 5));
    CHECK(h.env.sent_to(1).empty());
}
