// Router: answers that name no request. The child's error with id null (its parse error for a
// line it could not read), a session's unreadable answer to a request of the child's, and the
// deadline that keeps the child's requests to sessions from waiting forever when such an
// answer cannot be matched (docs/MULTIPLEXING.md).
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"
#include "router_clients.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

// What the demo server writes for a line it cannot parse.
const std::string kParseError =
    R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: the line is not valid JSON"}})";

std::string surrogate_call(const std::string& raw_id) {
    return R"({"jsonrpc":"2.0","id":)" + raw_id +
           R"(,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud83d"}}})";
}

// The child was told its request to a session failed, with -32603 saying `why`.
void check_failed_toward_child(RouterHarness& h, const std::string& raw_id,
                               const std::string& why) {
    const std::string reply = h.only_child_line();
    INFO(reply);
    CHECK(raw_id_of(reply) == raw_id);
    CHECK(error_code_of(reply) == -32603);
    CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(), Catch::Contains(why));
}

}  // namespace

// ----- the child's error with id null -----

TEST_CASE("router unmatched: the child's id-null error fails the only request at the child",
          "[router][unmatched]") {
    ClientPair h;
    h.forward(1, surrogate_call(R"("mine")"));
    h.env.clear_records();
    h.from_child(kParseError);
    const std::string reply = h.only_line_to(1);
    CHECK(
        reply ==
        R"({"jsonrpc":"2.0","id":"mine","error":{"code":-32700,"message":"parse error: the line is not valid JSON"}})");
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.router.in_flight() == 0);
    CHECK(h.router.unanswered(1) == 0);
    // Noted once, with the start of the line.
    CHECK(noted(h.env, R"(the line begins {"jsonrpc":"2.0","id":null,"error":{"code":-32700)"));
}

TEST_CASE("router unmatched: with two requests at the child an id-null error is only logged",
          "[router][unmatched]") {
    ClientPair h;
    h.forward(1, surrogate_call("1"));
    h.forward(2, surrogate_call("2"));
    h.env.clear_records();
    h.from_child(kParseError);
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.router.in_flight() == 2);
    CHECK(noted(h.env, "2 requests are at the server"));
    CHECK(noted(h.env, R"(the line begins {"jsonrpc":"2.0","id":null)"));

    // With none at the child, and for a result with id null, the same.
    ClientPair idle;
    idle.from_child(kParseError);
    idle.from_child(R"({"jsonrpc":"2.0","id":null,"result":{}})");
    CHECK(idle.env.sent_to(1).empty());
    CHECK(noted(idle.env, "no request is at the server"));
    CHECK(noted(idle.env, "dropped a result from the server whose id is null"));
}

// ----- a session's unreadable answer to the child's request -----

TEST_CASE("router unmatched: an unreadable answer fails the session's only request of the child",
          "[router][unmatched]") {
    for (const std::string& answer :
         {std::string("not json"), std::string(R"({"jsonrpc":"2.0","result":{"role":)"),
          std::string(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}})"),
          std::string(R"({"jsonrpc":"2.0","result":{}})")}) {
        DYNAMIC_SECTION("answer " << answer) {
            ClientPair h;
            h.busy(1);
            const std::string asked =
                h.ask(1, child_request(R"("s1")", "sampling/createMessage", kSamplingParams));
            h.env.clear_records();
            h.send(1, answer);
            check_failed_toward_child(h, R"("s1")", "unusable");
            h.env.clear_records();
            // Another session's unreadable line is not taken for an answer.
            const std::string again =
                h.ask(1, child_request(R"("s2")", "elicitation/create",
                                       R"({"message":"m","requestedSchema":{"type":"object"}})"));
            h.env.clear_records();
            h.send(2, answer);
            CHECK(h.env.child_lines.empty());
            h.send(1, R"({"jsonrpc":"2.0","id":)" + again + R"(,"result":{"action":"decline"}})");
            CHECK(h.only_child_line() ==
                  R"({"jsonrpc":"2.0","id":"s2","result":{"action":"decline"}})");
        }
    }
}

TEST_CASE("router unmatched: a request cut short or a blank line is not taken for an answer",
          "[router][unmatched]") {
    ClientPair h;
    h.busy(1);
    h.ask(1, child_request("5", "roots/list"));
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{)");
    h.send(1, "  \t ");  // nor a line of whitespace
    CHECK(h.env.child_lines.empty());
}

TEST_CASE(
    "router unmatched: with two requests of the child waiting, each times out with a clear "
    "error",
    "[router][unmatched]") {
    ClientPair h;
    h.busy(1);
    const std::string first =
        h.ask(1, child_request(R"("a")", "sampling/createMessage", kSamplingParams));
    h.env.advance(std::chrono::minutes(4));
    const std::string second =
        h.ask(1, child_request(R"("b")", "sampling/createMessage", kSamplingParams));
    h.env.clear_records();
    h.send(1, "not json");
    CHECK(h.env.child_lines.empty());
    CHECK(noted(h.env, "2 requests of the server to answer"));
    h.env.session_lines.clear();

    // Each waits Router::kClientAnswerTimeout from when it was sent, then the child is told
    // and the session's client hears it is cancelled.
    REQUIRE(h.router.next_deadline().has_value());
    CHECK(*h.router.next_deadline() == h.env.now() + std::chrono::minutes(6));
    h.env.advance(std::chrono::minutes(6));
    h.router.on_timer();
    check_failed_toward_child(h, R"("a")", "did not answer sampling/createMessage within 10m");
    const json cancelled = parse(h.only_line_to(1));
    CHECK(cancelled["method"] == "notifications/cancelled");
    CHECK(cancelled["params"]["requestId"].dump() == first);

    h.env.advance(std::chrono::minutes(4));
    h.router.on_timer();
    check_failed_toward_child(h, R"("b")", "within 10m");
    CHECK(parse(h.only_line_to(1))["params"]["requestId"].dump() == second);
    // A late answer goes nowhere.
    h.send(1, R"({"jsonrpc":"2.0","id":)" + second + R"(,"result":{}})");
    CHECK(h.env.child_lines.empty());
}
