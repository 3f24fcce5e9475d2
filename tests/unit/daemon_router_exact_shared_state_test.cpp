// Router, legacy children: a subscribe or setLevel that depends on one the child has not yet
// answered is acknowledged only with that answer, and shares its outcome.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

// Sessions 1, 2 and 3 on a ready child; child ids from 100.
struct Three : RouterHarness {
    explicit Three(const config::ServerConfig& config = router_config()) : RouterHarness(config) {
        child_ready();
        connect(1);
        connect(2);
        connect(3);
        env.next_child_id = 100;
    }
};

std::string cancel(const std::string& id) {
    std::string line =
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)";
    line += id;
    line += "}}";
    return line;
}

std::string ok(const std::string& id) {
    std::string line = R"({"jsonrpc":"2.0","id":)";
    line += id;
    line += R"(,"result":{}})";
    return line;
}

}  // namespace

// ---- resources/subscribe ----

TEST_CASE("router exact: a second subscribe is acknowledged only when the child takes the first",
          "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, subscribe(R"("a")", "demo://x"));
    h.send(2, subscribe("7", "demo://x"));
    h.send(3, subscribe(R"("b")", "demo://x"));
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.env.sent_to(3).empty());
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.unanswered(2) == 1);

    h.from_child(std::string(R"({"jsonrpc":"2.0","id":)") + raw_id_of(first) +
                 R"(,"result":{"_meta":{"x":1}}})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"a","result":{"_meta":{"x":1}}})");
    CHECK(h.only_line_to(2) == ok("7"));
    CHECK(h.only_line_to(3) == ok(R"("b")"));
    CHECK(h.router.unanswered(2) == 0);
    h.from_child(updated("demo://x"));
    for (SessionId s : {1, 2, 3}) CHECK(h.only_line_to(s) == updated("demo://x"));
}

TEST_CASE("router exact: a refused subscribe is refused to every session waiting on it",
          "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe(R"("s")", "demo://x"));
    h.answer_error(first, -32002, "no such resource");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"no such resource"}})");
    CHECK(h.only_line_to(2) ==
          R"({"jsonrpc":"2.0","id":"s","error":{"code":-32002,"message":"no such resource"}})");
    // Nobody holds it: no updates, and the next subscriber is the first again.
    h.from_child(updated("demo://x"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    CHECK(parse(h.forward(3, subscribe("3", "demo://x")))["method"] == "resources/subscribe");
}

TEST_CASE("router exact: a subscribe once taken is acknowledged at once", "[router][exact]") {
    Three h;
    h.answer(h.forward(1, subscribe("1", "demo://x")));
    h.env.clear_records();
    h.send(2, subscribe("2", "demo://x"));
    CHECK(h.only_line_to(2) == ok("2"));
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router exact: a subscribe of another URI does not wait", "[router][exact]") {
    Three h;
    h.forward(1, subscribe("1", "demo://x"));
    const std::string other = h.forward(2, subscribe("2", "demo://y"));
    CHECK(parse(other)["params"]["uri"] == "demo://y");
}

TEST_CASE("router exact: a waiting subscribe's id counts as in flight", "[router][exact]") {
    Three h;
    h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe("5", "demo://x"));
    h.send(2, R"({"jsonrpc":"2.0","id":5,"method":"tools/list"})");
    CHECK(error_code_of(h.only_line_to(2)) == -32600);
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router exact: a waiting subscriber takes the request over when the first leaves",
          "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe("2", "demo://x"));
    h.router.detach(1);
    // Neither a cancel nor an unsubscribe: session 2 still wants the subscription.
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.unanswered(2) == 1);
    h.answer(first);
    CHECK(h.only_line_to(2) == ok("2"));
    h.from_child(updated("demo://x"));
    CHECK(h.only_line_to(2) == updated("demo://x"));
}

TEST_CASE("router exact: a cancelled first subscribe still answers those waiting on it",
          "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe("2", "demo://x"));
    h.send(1, cancel("1"));
    CHECK(h.env.child_lines.empty());
    h.answer(first);
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.only_line_to(2) == ok("2"));
}

TEST_CASE("router exact: a waiting subscribe that is cancelled gets no answer", "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe("2", "demo://x"));
    h.send(2, cancel("2"));
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.unanswered(2) == 0);
    h.answer(first);
    CHECK(h.only_line_to(1) == ok("1"));
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router exact: a session leaving while it waits is not answered", "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe("2", "demo://x"));
    h.router.detach(2);
    CHECK(h.env.child_lines.empty());
    h.answer(first);
    CHECK(h.only_line_to(1) == ok("1"));
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router exact: waiting subscribes fail with the child and are not held",
          "[router][exact]") {
    Three h;
    h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe("2", "demo://x"));
    h.router.on_child_gone("crashed");
    for (SessionId s : {1, 2}) {
        const std::string reply = h.only_line_to(s);
        CHECK(error_code_of(reply) == -32603);
        CHECK(parse(reply)["error"]["data"]["reason"] == "crashed");
    }
    h.env.clear_records();
    h.child_ready();
    for (const std::string& line : h.env.child_lines) {
        CHECK(parse(line)["method"] != "resources/subscribe");
    }
}

TEST_CASE("router exact: a subscribe restored on a new child is waited on too", "[router][exact]") {
    Three h;
    h.answer(h.forward(1, subscribe("1", "demo://x")));
    h.router.on_child_gone("crashed");
    h.env.clear_records();
    h.child_ready();
    std::string restored;
    for (const std::string& line : h.env.child_lines) {
        if (parse(line)["method"] == "resources/subscribe") restored = line;
    }
    REQUIRE_FALSE(restored.empty());
    h.env.session_lines.clear();
    h.send(2, subscribe("2", "demo://x"));
    CHECK(h.env.sent_to(2).empty());
    h.answer_error(restored, -32002, "gone");
    CHECK(h.only_line_to(2) ==
          R"({"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"gone"}})");
}

TEST_CASE("router exact: a first subscribe timing out fails those waiting on it",
          "[router][exact]") {
    config::ServerConfig config = router_config();
    config.request_timeout = 5s;
    Three h(config);
    h.forward(1, subscribe("1", "demo://x"));
    h.send(2, subscribe("2", "demo://x"));
    h.env.advance(5s);
    h.router.on_timer();
    CHECK(error_code_of(h.only_line_to(1)) == -32603);
    CHECK(error_code_of(h.only_line_to(2)) == -32603);
    CHECK(h.router.unanswered(2) == 0);
    // Neither holds the URI: the next subscribe asks the child again.
    h.env.clear_records();
    CHECK(parse(h.forward(3, subscribe("3", "demo://x")))["method"] == "resources/subscribe");
}

// ---- logging/setLevel ----

TEST_CASE("router exact: a covered setLevel is acknowledged only when the child takes the first",
          "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, set_level("1", "info"));
    h.send(2, set_level(R"("L")", "error"));
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.env.child_lines.empty());
    h.answer(first);
    CHECK(h.only_line_to(1) == ok("1"));
    CHECK(h.only_line_to(2) == ok(R"("L")"));
    // Accepted: later ones are acknowledged at once.
    h.send(3, set_level("3", "warning"));
    CHECK(h.only_line_to(3) == ok("3"));
}

TEST_CASE("router exact: a refused setLevel is refused to those waiting on it", "[router][exact]") {
    Three h;
    const std::string first = h.forward(1, set_level("1", "info"));
    h.send(2, set_level("2", "error"));
    h.answer_error(first, -32601, "no logging");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no logging"}})");
    CHECK(h.only_line_to(2) ==
          R"({"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no logging"}})");
    // The child's level is unknown again: the next one is asked of it.
    CHECK(parse(h.forward(3, set_level("3", "critical")))["method"] == "logging/setLevel");
}

TEST_CASE("router exact: a setLevel waits on the last one sent and not an older one",
          "[router][exact]") {
    Three h;
    const std::string info = h.forward(1, set_level("1", "info"));
    const std::string debug = h.forward(2, set_level("2", "debug"));
    h.send(3, set_level("3", "error"));
    h.answer(info);
    CHECK(h.only_line_to(1) == ok("1"));
    CHECK(h.env.sent_to(3).empty());
    h.answer(debug);
    CHECK(h.only_line_to(2) == ok("2"));
    CHECK(h.only_line_to(3) == ok("3"));
}

TEST_CASE("router exact: an older setLevel refused keeps the newer level", "[router][exact]") {
    Three h;
    const std::string info = h.forward(1, set_level("1", "info"));
    const std::string debug = h.forward(2, set_level("2", "debug"));
    h.answer_error(info, -32603, "busy");
    h.answer(debug);
    h.env.clear_records();
    // The child sends debug: warning is covered and needs no request.
    h.send(3, set_level("3", "warning"));
    CHECK(h.only_line_to(3) == ok("3"));
    CHECK(h.env.child_lines.empty());
}
