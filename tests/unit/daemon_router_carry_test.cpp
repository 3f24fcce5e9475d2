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

TEST_CASE("router carry: what is under way keeps a router from being carried", "[router][upgrade]") {
    Before h;
    const std::string forwarded = h.forward(1, call("9", "slow"));
    CHECK(h.router.why_not_carried() == "requests to it wait for their answers");
    h.answer(forwarded);
    CHECK(h.router.why_not_carried().empty());
    // A line waiting for a child that is being replaced.
    h.router.on_child_stopping();
    h.send(2, call("11", "later"));
    CHECK(h.router.why_not_carried() == "sessions' lines wait for it to be ready or for their turn");
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
