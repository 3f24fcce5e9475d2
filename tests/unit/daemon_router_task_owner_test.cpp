// Router: a task is the session's whose request created it, also when the answer reached that
// session byte for byte because the session's own id was the number mcpd gave the child for
// the request; the task's status then goes to that session alone.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

TEST_CASE("router: a task created under the id mcpd gave the child is the asking session's",
          "[router][tasks]") {
    RouterHarness h;
    h.child_ready("2025-11-25");
    h.connect(1);
    h.connect(2);
    h.env.next_child_id = 7;
    const std::string sent = h.forward(
        1,
        R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"long","task":{"ttl":60000}}})");
    REQUIRE(raw_id_of(sent) == "7");  // the session's id and mcpd's are the same bytes

    const std::string created =
        R"({"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"t-7","status":"working"}}})";
    h.from_child(created);
    CHECK(h.only_line_to(1) == created);
    CHECK(h.env.sent_to(2).empty());

    const std::string status =
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t-7","status":"completed"}})";
    h.from_child(status);
    CHECK(h.only_line_to(1) == status);
    CHECK(h.env.sent_to(2).empty());
}
