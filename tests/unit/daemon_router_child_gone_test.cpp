// Router: what a child's restart ends besides the sessions' requests: the child's own requests
// to sessions (each session is told they are cancelled) and everything that lived in the
// child (tasks, URL elicitations).
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"
#include "router_clients.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

const std::string kSamplingRequest =
    R"({"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10}})";

}  // namespace

TEST_CASE("router: a child request in flight at a session is cancelled when the child goes",
          "[router]") {
    ClientPair h;
    h.busy(1);
    h.from_child(kSamplingRequest);
    const std::string at_session = h.only_line_to(1);
    const std::string session_side_id = raw_id_of(at_session);
    h.env.clear_records();

    h.router.on_child_gone("the server exited with status 1");
    bool told = false;
    for (const std::string& line : h.env.sent_to(1)) {
        const json j = parse(line);
        if (j.value("method", "") != "notifications/cancelled") continue;
        CHECK(j["params"]["requestId"] == parse(session_side_id));
        told = true;
    }
    CHECK(told);
    // The other session had nothing of the child's: it hears nothing of it.
    for (const std::string& line : h.env.sent_to(2))
        CHECK(parse(line).value("method", "") != "notifications/cancelled");

    // The session's late answer goes nowhere: the next child never asked.
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","id":)" + session_side_id +
                  R"(,"result":{"role":"assistant","content":{"type":"text","text":"late"},"model":"m"}})");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: task ownership does not survive into a restarted child", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1, "2025-11-25", kAllClientCapabilities);
    h.env.next_child_id = 100;
    // Session 1 creates a task.
    const std::string call = h.forward(
        1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","task":{"ttl":60000}}})");
    h.from_child(R"({"jsonrpc":"2.0","id":)" + raw_id_of(call) +
                 R"(,"result":{"task":{"taskId":"t-1","status":"working","createdAt":"2025-11-25T00:00:00Z","ttl":60000}}})");
    h.env.clear_records();
    // The owner's task-linked request reaches it while the child lives.
    const std::string linked =
        R"({"jsonrpc":"2.0","id":"srv-2","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}},"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}}}})";
    h.from_child(linked);
    CHECK(h.env.sent_to(1).size() == 1);
    CHECK(h.env.child_lines.empty());

    h.router.on_child_gone("restarting");
    h.child_ready();
    h.env.clear_records();
    // The next child's request naming the old task id is declined, not given to session 1.
    h.from_child(linked);
    CHECK(h.env.sent_to(1).empty());
    const std::string reply = h.only_child_line();
    INFO(reply);
    CHECK(raw_id_of(reply) == R"("srv-2")");
}
