// Router: its state and its sessions' carried across an upgrade in place (router_carry.cpp).
// A second router, given what the first carried, goes on where it stopped: the same sessions,
// subscriptions and levels, nothing said again to the child, ids and tokens never reused.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

std::string call(const std::string& id, const std::string& text) {
    return R"({"jsonrpc":"2.0","id":)" + id +
           R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":")" + text + R"("}}})";
}

// Sessions 1 and 2 on a ready child: 1 subscribed to demo://x and set to "warning", 2 set to
// nothing; a call of each answered; child ids from 100.
struct Before : RouterHarness {
    Before() {
        child_ready();
        connect(1);
        connect(2);
        env.next_child_id = 100;
        answer(forward(1, subscribe("5", "demo://x")));
        answer(forward(1, set_level("6", "warning")));
        answer(forward(1, call("7", "one")));
        answer(forward(2, call(R"("x")", "two")));
        env.clear_records();
    }
};

// The state of `from` taken over by a fresh router on a child that is ready again (the carried
// process's handshake).
void carry(Before& from, RouterHarness& to) {
    to.child_ready();
    to.env.next_child_id = from.env.next_child_id;
    to.env.clear_records();
    to.router.restore_carried(from.router.carried());
    for (const SessionId id : {1u, 2u}) {
        std::optional<routing::SessionState> state = from.router.carried_session(id);
        REQUIRE(state.has_value());
        to.router.adopt_carried(std::move(*state));
    }
    to.router.carried_in();
}

}  // namespace

TEST_CASE("router carry: a second router takes the sessions as they were, saying nothing to anyone",
          "[router][upgrade]") {
    Before before;
    CHECK(before.router.why_not_carried().empty());
    RouterHarness after;
    carry(before, after);

    CHECK(after.env.child_lines.empty());  // no subscribe, no setLevel sent again
    CHECK(after.env.sent_to(1).empty());
    CHECK(after.env.sent_to(2).empty());
    CHECK(after.router.session_count() == 2);
    CHECK(to_json(after.router.carried()).dump() == to_json(before.router.carried()).dump());
    for (const SessionId id : {1u, 2u})
        CHECK(to_json(*after.router.carried_session(id)).dump() ==
              to_json(*before.router.carried_session(id)).dump());

    // The subscription is still session 1's: the child's update reaches it alone.
    after.from_child(updated("demo://x"));
    CHECK(after.only_line_to(1) == updated("demo://x"));
    CHECK(after.env.sent_to(2).empty());
    // Requests go on with their own ids; the child's ids are new ones.
    const std::string next_id = std::to_string(before.env.next_child_id);
    const std::string forwarded = after.forward(2, call(R"("y")", "three"));
    CHECK(raw_id_of(forwarded) == next_id);
    after.answer(forwarded);
    CHECK(after.only_line_to(2) == R"({"jsonrpc":"2.0","id":"y","result":{}})");
    // Its counters went with it.
    CHECK(after.router.carried_session(1)->counters.requests == 3);
}

TEST_CASE("router carry: requests in flight go with the router, answered once with their own ids and progress",
          "[router][upgrade]") {
    Before before;
    const std::string slow = before.forward(
        1, R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok"}}})");
    const std::string own_token = raw_progress_token_of(slow);
    before.from_child(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                      own_token + R"(,"progress":1}})");
    CHECK(before.only_line_to(1) ==
          R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1}})");
    const std::string other = before.forward(2, call(R"("z")", "two"));
    CHECK(before.router.why_not_carried().empty());  // nothing under way stands in the way now

    RouterHarness after;
    carry(before, after);
    CHECK(after.router.in_flight() == 2);
    CHECK(after.router.unanswered(1) == 1);
    CHECK(to_json(after.router.carried()).dump() == to_json(before.router.carried()).dump());
    // The child goes on: its progress and answers reach the sessions that asked, once.
    after.from_child(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                     own_token + R"(,"progress":2}})");
    CHECK(after.only_line_to(1) ==
          R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":2}})");
    after.answer(other, R"({"content":[]})");
    CHECK(after.only_line_to(2) == R"({"jsonrpc":"2.0","id":"z","result":{"content":[]}})");
    after.answer(slow);
    CHECK(after.only_line_to(1) == R"({"jsonrpc":"2.0","id":9,"result":{}})");
    after.answer(slow);  // a second answer to the same id is not delivered again
    CHECK(after.env.sent_to(1).empty());
    CHECK(after.router.in_flight() == 0);
    // Counted as answered where they were counted as sent.
    const CallCounters total = after.router.stats().total();
    CHECK(total.in_flight == 0);
    CHECK(total.requests == before.router.stats().total().requests);
    CHECK(total.replies == total.requests);
}

TEST_CASE("router carry: a line waiting for a child that is being replaced goes to the next one",
          "[router][upgrade]") {
    Before before;
    before.router.on_child_stopping();
    before.send(2, call("11", "later"));
    CHECK(before.env.child_lines.empty());
    RouterHarness after;
    carry(before, after);
    // The child the new router took over is ready: the line goes to it.
    const std::string sent = after.only_child_line();
    CHECK(sent.find("\"later\"") != std::string::npos);
    after.answer(sent);
    CHECK(after.only_line_to(2) == R"({"jsonrpc":"2.0","id":11,"result":{}})");
}

TEST_CASE("router carry: a session that unsubscribes after the upgrade releases the child's subscription",
          "[router][upgrade]") {
    Before before;
    RouterHarness after;
    carry(before, after);
    const std::string unsubscribe = after.forward(1, subscribe("10", "demo://x", false));
    CHECK(unsubscribe.find("resources/unsubscribe") != std::string::npos);
    after.answer(unsubscribe);
    CHECK(after.only_line_to(1) == R"({"jsonrpc":"2.0","id":10,"result":{}})");
}
