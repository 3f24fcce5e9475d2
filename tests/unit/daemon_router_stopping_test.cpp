// Router: a child being stopped (mcpctl restart, a reload, a fault) with sessions attached
// (docs/MULTIPLEXING.md, "Restarts with sessions attached"): what it has may still be
// answered, and what comes meanwhile waits for the next child instead of failing with it.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

std::string stopping_call(const std::string& raw_id, const std::string& tool = "echo") {
    return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"method":"tools/call","params":{"name":")" +
           tool + R"("}})";
}

// The lines the child received that are tools/call requests.
std::vector<std::string> calls_at_child(const FakeRouterEnvironment& env) {
    std::vector<std::string> calls;
    for (const std::string& line : env.child_lines) {
        if (parse(line).value("method", "") == "tools/call") calls.push_back(line);
    }
    return calls;
}

}  // namespace

TEST_CASE("router: a request sent while the child stops waits for the next child", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.env.next_child_id = 100;
    const std::string old_call = h.forward(1, stopping_call("1", "slow"));

    h.router.on_child_stopping();
    h.send(1, stopping_call("2"));
    CHECK(h.env.child_lines.empty());  // not given to the process being stopped
    CHECK(h.env.sent_to(1).empty());

    // The old process may still answer what it had.
    h.answer(old_call, R"({"n":"old"})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":1,"result":{"n":"old"}})");

    // It exits: nothing is failed, since nothing else was given to it.
    h.router.on_child_gone("the server exited with status 0");
    CHECK(h.env.sent_to(1).empty());

    h.env.next_child_id = 1;
    h.child_ready();
    const std::vector<std::string> forwarded = calls_at_child(h.env);
    REQUIRE(forwarded.size() == 1);
    CHECK(parse(forwarded[0])["params"]["name"] == "echo");
    h.env.session_lines.clear();
    h.answer(forwarded[0], R"({"n":"new"})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":2,"result":{"n":"new"}})");
}

TEST_CASE("router: a request sent while the child stops fails when no child comes back",
          "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.router.on_child_stopping();
    h.send(1, stopping_call("7"));
    h.router.on_child_gone("the server exited with status 0");
    CHECK(h.env.sent_to(1).empty());
    h.router.fail_waiting("it was stopped");
    const std::string failed = h.only_line_to(1);
    CHECK(raw_id_of(failed) == "7");
    CHECK(parse(failed)["error"]["message"] == "the server is not available: it was stopped");
}

TEST_CASE("router: a serialized request waiting its turn when the child stops goes to the next",
          "[router]") {
    config::ServerConfig config = router_config();
    config.sharing = config::Sharing::serialized;
    RouterHarness h(config);
    h.child_ready();
    h.connect(1);
    h.connect(2);
    h.forward(1, stopping_call("1", "slow"));
    h.send(2, stopping_call("5"));  // its turn has not come
    CHECK(h.env.child_lines.empty());

    h.router.on_child_stopping();
    h.router.on_child_gone("the server exited with status 0");
    CHECK(error_code_of(h.only_line_to(1)) == -32603);  // it was at the child
    CHECK(h.env.sent_to(2).empty());                    // it never was

    h.child_ready();
    const std::vector<std::string> forwarded = calls_at_child(h.env);
    REQUIRE(forwarded.size() == 1);
    h.answer(forwarded[0]);
    // Its answer, after the new child's list_changed notifications (sent on every restart).
    const std::vector<std::string>& to_two = h.env.sent_to(2);
    REQUIRE_FALSE(to_two.empty());
    CHECK(to_two.back() == R"({"jsonrpc":"2.0","id":5,"result":{}})");
    for (std::size_t i = 0; i + 1 < to_two.size(); ++i)
        CHECK(parse(to_two[i])["method"].get<std::string>().ends_with("/list_changed"));
}
