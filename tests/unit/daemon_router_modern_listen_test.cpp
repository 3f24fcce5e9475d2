// Router, modern child: subscriptions/listen streams (docs/MULTIPLEXING.md, "Modern children
// (2026-07-28)"): the listen id kept for the life of the stream, notifications and the
// graceful close mapped back to their owner, the child's teardown, task filters, and a
// restart with streams open.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

constexpr const char* kSubscriptionId = "io.modelcontextprotocol/subscriptionId";

// A modern child with sessions 1 and 2 attached (no handshake: each request carries its own
// _meta), child ids from 100.
struct ModernListen : RouterHarness {
    explicit ModernListen(const config::ServerConfig& config = router_config())
        : RouterHarness(config) {
        modern_child_ready();
        router.attach(1);
        router.attach(2);
        env.clear_records();
        env.next_child_id = 100;
    }

    // Session `id` opens a stream with its own listen id `raw_id`; returns the child's id for it.
    std::string listen(SessionId id, const std::string& raw_id,
                       const std::string& filter = R"("notifications":{"toolsListChanged":true})") {
        const std::string at_child =
            forward(id, modern_request(raw_id, "subscriptions/listen", filter));
        return raw_id_of(at_child);
    }

    // Session `id` gets a task of its own, `task`, from a tools/call the child answered with one.
    void own_task(SessionId id, const std::string& task) {
        const std::string call = forward(
            id, modern_request(R"("call-)" + task + R"(")", "tools/call", R"("name":"slow")"));
        answer(call, R"({"resultType":"task","taskId":")" + task +
                         R"(","status":"working","createdAt":"2026-08-01T00:00:00Z",)"
                         R"("lastUpdatedAt":"2026-08-01T00:00:00Z","ttlMs":60000})");
        env.session_lines.clear();
    }
};

// A notification the child sends on the stream it knows as `child_listen_id`.
std::string on_stream(const std::string& method, const std::string& child_listen_id,
                      const std::string& params = "") {
    return R"({"jsonrpc":"2.0","method":")" + method + R"(","params":{)" + params +
           (params.empty() ? "" : ",") + R"("_meta":{")" + kSubscriptionId + R"(":)" +
           child_listen_id + "}}}";
}

std::string acknowledged(const std::string& child_listen_id) {
    return on_stream("notifications/subscriptions/acknowledged", child_listen_id,
                     R"("notifications":{"toolsListChanged":true})");
}

// The subscriptionId a line delivered to a session carries (raw JSON, to see its type).
std::string subscription_of(const std::string& line) {
    const json j = parse(line);
    const json* holder = j.contains("params") ? &j["params"] : &j["result"];
    INFO(line);
    REQUIRE(holder->contains("_meta"));
    return (*holder)["_meta"][kSubscriptionId].dump();
}

}  // namespace

TEST_CASE("router modern: a listen request passes with its _meta, only its id replaced",
          "[router][modern]") {
    ModernListen h;
    const std::string request =
        modern_request("5", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})");
    CHECK(h.forward(1, request) == modern_request("100", "subscriptions/listen",
                                                  R"("notifications":{"toolsListChanged":true})"));
    CHECK(h.env.sent_to(1).empty());  // a stream has no answer until it ends
    CHECK(h.router.in_flight() == 1);
    CHECK(h.router.unanswered(1) == 0);  // it never holds open a session whose input ended
}

TEST_CASE("router modern: stream notifications go to their owner alone, named by its own id",
          "[router][modern]") {
    ModernListen h;
    // Both sessions number their requests alike: the child sees two different streams.
    const std::string own_1 = GENERATE(std::string("1"), std::string(R"("listen-1")"));
    const std::string own_2 = "1";
    const std::string child_1 = h.listen(1, own_1);
    const std::string child_2 = h.listen(2, own_2);
    REQUIRE(child_1 != child_2);

    h.from_child(acknowledged(child_2));
    CHECK(h.env.sent_to(1).empty());
    const std::string ack_2 = h.only_line_to(2);
    CHECK(subscription_of(ack_2) == own_2);
    CHECK(parse(ack_2)["params"]["notifications"] == json{{"toolsListChanged", true}});

    h.from_child(acknowledged(child_1));
    CHECK(h.env.sent_to(2).empty());
    CHECK(subscription_of(h.only_line_to(1)) == own_1);  // a string stays a string

    h.from_child(on_stream("notifications/tools/list_changed", child_1));
    CHECK(h.only_line_to(1) == on_stream("notifications/tools/list_changed", own_1));
    CHECK(h.env.sent_to(2).empty());

    h.from_child(on_stream("notifications/resources/updated", child_2, R"("uri":"file:///a")"));
    CHECK(h.only_line_to(2) ==
          on_stream("notifications/resources/updated", own_2, R"("uri":"file:///a")"));
    CHECK(h.env.sent_to(1).empty());

    // A stream mcpd never opened reaches nobody.
    h.from_child(on_stream("notifications/tools/list_changed", "999"));
    h.from_child(on_stream("notifications/tools/list_changed", R"("100")"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router modern: a listen stream is not subject to request_timeout", "[router][modern]") {
    config::ServerConfig config = router_config();
    config.request_timeout = 5s;
    ModernListen h(config);
    const std::string child_id = h.listen(1, "3");
    h.env.advance(60s);
    h.router.on_timer();
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());
    h.from_child(acknowledged(child_id));
    CHECK(subscription_of(h.only_line_to(1)) == "3");
}

TEST_CASE("router modern: the graceful close result is the owner's, with both ids its own",
          "[router][modern]") {
    ModernListen h;
    const std::string own = GENERATE(std::string("8"), std::string(R"("s")"));
    const std::string child_id = h.listen(1, own);
    h.listen(2, own);
    h.from_child(R"({"jsonrpc":"2.0","id":)" + child_id +
                 R"(,"result":{"resultType":"complete","_meta":{")" + kSubscriptionId + R"(":)" +
                 child_id + "}}}");
    const std::string closed = h.only_line_to(1);
    CHECK(closed == R"({"jsonrpc":"2.0","id":)" + own +
                        R"(,"result":{"resultType":"complete","_meta":{")" + kSubscriptionId +
                        R"(":)" + own + "}}}");
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.router.unanswered(1) == 0);
    // The stream is gone: nothing more on it reaches anyone.
    h.from_child(on_stream("notifications/tools/list_changed", child_id));
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router modern: the child's cancel ends a stream for its owner, named by its own id",
          "[router][modern]") {
    ModernListen h;
    const std::string own_1 = R"("stream-a")";
    const std::string own_2 = "7";
    const std::string child_1 = h.listen(1, own_1);
    const std::string child_2 = h.listen(2, own_2);
    h.from_child(acknowledged(child_1));
    h.from_child(acknowledged(child_2));
    h.env.session_lines.clear();

    // The stream may be named by requestId, by _meta's subscriptionId, or by both.
    auto cancel = [](const std::string& request_id, const std::string& subscription_id) {
        std::string line = R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{)";
        if (!request_id.empty()) line += R"("requestId":)" + request_id + ",";
        line += R"("reason":"shutting down")";
        if (!subscription_id.empty())
            line +=
                std::string(R"(,"_meta":{")") + kSubscriptionId + R"(":)" + subscription_id + "}";
        line += "}}";
        return line;
    };
    const bool by_request = GENERATE(true, false);
    const bool by_meta = GENERATE(true, false);
    if (!by_request && !by_meta) return;
    const SessionId owner = GENERATE(SessionId{1}, SessionId{2});
    const SessionId other = owner == 1 ? 2 : 1;
    const std::string& child = owner == 1 ? child_1 : child_2;
    const std::string& own = owner == 1 ? own_1 : own_2;
    const std::string& other_child = owner == 1 ? child_2 : child_1;
    const std::string& other_own = owner == 1 ? own_2 : own_1;

    h.from_child(cancel(by_request ? child : "", by_meta ? child : ""));
    CHECK(h.env.sent_to(other).empty());
    CHECK(h.only_line_to(owner) == cancel(by_request ? own : "", by_meta ? own : ""));
    CHECK(h.router.in_flight() == 1);  // the other session's stream lives on

    // Whatever still comes for the ended stream is dropped, a graceful close included.
    h.from_child(on_stream("notifications/tools/list_changed", child));
    h.from_child(R"({"jsonrpc":"2.0","id":)" + child +
                 R"(,"result":{"resultType":"complete","_meta":{")" + kSubscriptionId + R"(":)" +
                 child + "}}}");
    h.from_child(cancel(child, child));
    CHECK(h.env.sent_to(owner).empty());
    CHECK(h.env.sent_to(other).empty());

    // The other stream is untouched.
    h.from_child(on_stream("notifications/tools/list_changed", other_child));
    CHECK(h.only_line_to(other) == on_stream("notifications/tools/list_changed", other_own));
}

TEST_CASE("router modern: a listen filter keeps only the session's own task ids",
          "[router][modern]") {
    ModernListen h;
    h.own_task(1, "t-1");
    h.own_task(2, "t-2");
    h.env.next_child_id = 100;
    const std::string filter_key = GENERATE(std::string("notifications"), std::string("filter"));
    auto filter = [&](const std::string& ids) {
        return "\"" + filter_key + R"(":{"toolsListChanged":true,"taskIds":)" + ids + "}";
    };
    SECTION("another session's task and an unknown one are dropped") {
        const std::string at_child =
            h.forward(1, modern_request("4", "subscriptions/listen",
                                        filter(R"([ "t-2", "t-1" ,"nobody's", 12])")));
        CHECK(at_child == modern_request("100", "subscriptions/listen", filter(R"(["t-1"])")));
    }
    SECTION("an id written with escapes is still the session's own, and kept as written") {
        const std::string at_child = h.forward(
            1, modern_request("4", "subscriptions/listen", filter(R"(["t\u002d1","t-2"])")));
        CHECK(at_child == modern_request("100", "subscriptions/listen", filter(R"(["t\u002d1"])")));
    }
    SECTION("a member written with escapes, or twice, is filtered all the same") {
        const std::string request = modern_request(
            "4", "subscriptions/listen",
            "\"" + filter_key + R"(":{"task\u0049ds":["t-2","t-1"],"taskIds":["t-2"]})");
        CHECK(h.forward(1, request) ==
              modern_request("100", "subscriptions/listen",
                             "\"" + filter_key + R"(":{"task\u0049ds":["t-1"],"taskIds":[]})"));
    }
    SECTION("nothing of its own: an empty list") {
        const std::string at_child =
            h.forward(2, modern_request("4", "subscriptions/listen", filter(R"(["t-1"])")));
        CHECK(at_child == modern_request("100", "subscriptions/listen", filter("[]")));
    }
    SECTION("only its own: the line passes unchanged but for the id") {
        const std::string request =
            modern_request("4", "subscriptions/listen", filter(R"([ "t-2" ])"));
        CHECK(h.forward(2, request) ==
              modern_request("100", "subscriptions/listen", filter(R"([ "t-2" ])")));
    }
    // Still a listen stream: its notifications come back to the session under its own id.
    h.from_child(acknowledged("100"));
    CHECK(h.env.session_lines[1].size() + h.env.session_lines[2].size() == 1);
}

TEST_CASE("router modern: a restart ends open streams for their owners, new ones work",
          "[router][modern]") {
    ModernListen h;
    const std::string child_1 = h.listen(1, R"("l1")");
    const std::string child_2 = h.listen(2, "9");
    h.from_child(acknowledged(child_1));
    h.from_child(acknowledged(child_2));
    h.env.session_lines.clear();

    h.router.on_child_gone("the server crashed");
    for (const auto& [session, own] : {std::pair<SessionId, std::string>{1, R"("l1")"}, {2, "9"}}) {
        const json cancelled = parse(h.only_line_to(session));
        CHECK(cancelled["method"] == "notifications/cancelled");
        CHECK(cancelled["params"]["requestId"].dump() == own);
        CHECK(cancelled["params"]["reason"] == "the server restarted");
        CHECK_FALSE(cancelled.contains("id"));  // not an error: the stream ended
        CHECK(h.router.unanswered(session) == 0);
    }

    h.modern_child_ready();
    h.env.clear_records();
    h.env.next_child_id = 500;
    // The old process's stream ids mean nothing now.
    h.from_child(on_stream("notifications/tools/list_changed", child_1));
    CHECK(h.env.sent_to(1).empty());
    // The client listens again, with the same id.
    const std::string again = h.listen(1, R"("l1")");
    CHECK(again == "500");
    h.from_child(acknowledged(again));
    CHECK(subscription_of(h.only_line_to(1)) == R"("l1")");
    CHECK(h.env.sent_to(2).empty());
}
