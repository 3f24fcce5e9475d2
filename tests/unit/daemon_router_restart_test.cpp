// Router: the child going away and coming back with sessions attached (docs/MULTIPLEXING.md,
// "Restarts with sessions attached"), and deadlines ("Both eras", timeouts): start_timeout
// for waiting lines, request_timeout for unanswered requests.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using Catch::Matchers::Contains;

namespace {

struct Running : RouterHarness {
    explicit Running(const config::ServerConfig& config = router_config()) : RouterHarness(config) {
        child_ready("2025-11-25");
        connect(1);
        connect(2);
        env.next_child_id = 100;
    }
};

std::string slow_call(const std::string& raw_id) {
    return R"({"jsonrpc":"2.0","id":)" + raw_id +
           R"(,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p"}}})";
}

}  // namespace

TEST_CASE("router: when the child goes, every request in flight fails with the reason",
          "[router]") {
    Running h;
    const std::string a = h.forward(1, slow_call(R"("a")"));
    const std::string b = h.forward(2, slow_call("12345678901234567890"));
    h.router.on_child_gone("the server exited with status 1");

    const std::string to_a = h.only_line_to(1);
    CHECK(raw_id_of(to_a) == R"("a")");
    CHECK(error_code_of(to_a) == -32603);
    CHECK(parse(to_a)["error"]["data"]["reason"] == "the server exited with status 1");
    CHECK(parse(to_a)["error"]["data"]["outcome"] == "unknown");  // it may have run
    const std::string to_b = h.only_line_to(2);
    CHECK(raw_id_of(to_b) == "12345678901234567890");
    CHECK(parse(to_b)["error"]["data"]["reason"] == "the server exited with status 1");

    CHECK(h.router.has_session(1));
    CHECK(h.router.has_session(2));
    CHECK(h.env.closed.empty());
    CHECK(h.router.in_flight() == 0);
    CHECK_FALSE(h.router.child_ready());
    // The same ids may be used again at once.
    h.send(1, slow_call(R"("a")"));
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: while the child is away, lines wait for the next one", "[router]") {
    Running h;
    h.router.on_child_gone("restarting");
    h.env.clear_records();
    h.send(1, slow_call("1"));
    h.send(1, R"({"jsonrpc":"2.0","method":"x-vendor/note"})");
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.want_child_calls >= 1);

    h.env.next_child_id = 1;  // a new child counts from 1 again
    h.child_ready("2025-11-25");
    std::vector<std::string> forwarded;
    for (const std::string& line : h.env.child_lines) {
        if (parse(line).value("method", "") == "tools/call" ||
            parse(line).value("method", "") == "x-vendor/note") {
            forwarded.push_back(line);
        }
    }
    REQUIRE(forwarded.size() == 2);
    CHECK(parse(forwarded[0])["method"] == "tools/call");
    CHECK(parse(forwarded[1]) == parse(R"({"jsonrpc":"2.0","method":"x-vendor/note"})"));
    h.env.session_lines.clear();
    h.answer(forwarded[0]);
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":1,"result":{}})");
}

TEST_CASE("router: a new child gets the held subscriptions and log level back", "[router]") {
    Running h;
    h.answer(h.forward(
        1,
        R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://a"}})"));
    h.answer(h.forward(
        2,
        R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://b"}})"));
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"demo://b"}})");
    h.answer(h.forward(
        2, R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"notice"}})"));
    h.send(1, R"({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"error"}})");
    h.router.on_child_gone("crashed");
    h.env.clear_records();

    h.child_ready("2025-11-25");
    std::vector<std::string> subscribed;
    std::vector<std::string> levels;
    for (const std::string& line : h.env.child_lines) {
        const json j = parse(line);
        REQUIRE(j.contains("id"));
        if (j["method"] == "resources/subscribe") subscribed.push_back(j["params"]["uri"]);
        if (j["method"] == "logging/setLevel") levels.push_back(j["params"]["level"]);
    }
    std::sort(subscribed.begin(), subscribed.end());
    CHECK(subscribed == std::vector<std::string>{"demo://a", "demo://b"});
    CHECK(levels == std::vector<std::string>{"notice"});
    // Those answers are mcpd's own.
    const std::vector<std::string> sent = h.env.child_lines;
    h.env.session_lines.clear();
    for (const std::string& line : sent) h.answer(line);
    for (SessionId s : {1, 2}) {
        for (const std::string& line : h.env.sent_to(s)) {
            CHECK_FALSE(parse(line).contains("id"));
        }
    }
    CHECK(h.env.notes.empty());
}

// The fake child declares tools and resources with listChanged, no prompts (the cases of
// each capability are in daemon_router_exact_lifecycle_test.cpp).
TEST_CASE("router: a new child makes the sessions refresh their lists", "[router]") {
    Running h;
    h.router.attach(3);  // not initialized: hears nothing
    h.router.on_child_gone("crashed");
    h.env.clear_records();
    h.child_ready("2025-11-25");
    for (SessionId s : {1, 2}) {
        const auto& lines = h.env.sent_to(s);
        std::vector<std::string> methods;
        for (const std::string& line : lines) methods.push_back(parse(line)["method"]);
        std::sort(methods.begin(), methods.end());
        CHECK(methods == std::vector<std::string>{"notifications/resources/list_changed",
                                                  "notifications/tools/list_changed"});
    }
    CHECK(h.env.sent_to(3).empty());
    CHECK(h.env.closed.empty());
}

TEST_CASE("router: a new child with another protocol version closes initialized sessions",
          "[router]") {
    Running h;
    h.router.attach(3);  // never initialized: it may still initialize with the new child
    h.router.on_child_gone("crashed");
    h.env.clear_records();
    h.child_ready("2025-06-18");
    std::vector<SessionId> closed;
    for (const auto& [id, reason] : h.env.closed) {
        closed.push_back(id);
        CHECK_FALSE(reason.empty());
    }
    std::sort(closed.begin(), closed.end());
    CHECK(closed == std::vector<SessionId>{1, 2});
    CHECK_FALSE(h.env.notes.empty());
    h.send(
        3,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
    CHECK(parse(h.only_line_to(3))["result"]["protocolVersion"] == "2025-06-18");
}

TEST_CASE("router: the child's pending requests to sessions die with it", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1, "2025-11-25", {{"roots", json::object()}});
    h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})");
    h.from_child(R"({"jsonrpc":"2.0","id":"old","method":"roots/list"})");
    const std::string session_id = raw_id_of(h.env.sent_to(1).back());
    h.router.on_child_gone("crashed");
    h.child_ready();
    h.env.clear_records();
    h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{"roots":[]}})");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a subscribe lost with the child is not held afterwards", "[router]") {
    Running h;
    h.forward(
        1,
        R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"demo://a"}})");
    h.router.on_child_gone("crashed");
    CHECK(error_code_of(h.only_line_to(1)) == -32603);
    h.env.clear_records();
    h.child_ready();
    for (const std::string& line : h.env.child_lines) {
        CHECK(parse(line)["method"] != "resources/subscribe");
    }
}

// ---- deadlines ----

TEST_CASE("router: a request waiting past start_timeout gets an error", "[router]") {
    RouterHarness h;  // start_timeout 10s
    h.router.attach(1);
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
    h.env.advance(4s);
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    REQUIRE(h.router.next_deadline().has_value());
    CHECK(*h.router.next_deadline() == h.env.now() - 4s + 10s);

    h.env.advance(6s);
    h.router.on_timer();
    const std::string reply = h.only_line_to(1);
    CHECK(raw_id_of(reply) == "0");
    CHECK(error_code_of(reply) == -32603);
    CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(), Contains("start_timeout"));
    // The notification behind it has its own deadline, and expires without an answer.
    REQUIRE(h.router.next_deadline().has_value());
    h.env.advance(4s);
    h.router.on_timer();
    CHECK(h.env.sent_to(1).empty());
    CHECK_FALSE(h.router.next_deadline().has_value());
    h.child_ready();
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: fail_waiting answers waiting requests at once", "[router]") {
    RouterHarness h;
    h.router.attach(1);
    h.router.attach(2);
    h.send(1, R"({"jsonrpc":"2.0","id":"a","method":"initialize","params":{}})");
    h.send(2, R"({"jsonrpc":"2.0","id":"b","method":"initialize","params":{}})");
    h.send(2, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    h.router.fail_waiting("the server failed to start 5 times");
    const std::string to_a = h.only_line_to(1);
    CHECK(raw_id_of(to_a) == R"("a")");
    CHECK(error_code_of(to_a) == -32603);
    CHECK_THAT(parse(to_a)["error"]["message"].get<std::string>(),
               Contains("the server failed to start 5 times"));
    CHECK(raw_id_of(h.only_line_to(2)) == R"("b")");
    CHECK_FALSE(h.router.next_deadline().has_value());
    h.child_ready();
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: an unanswered request is cancelled at request_timeout", "[router]") {
    config::ServerConfig config = router_config();
    config.request_timeout = 5s;
    Running h(config);
    const int changes = h.env.deadline_changes;
    const std::string at_child = h.forward(1, slow_call(R"("slow")"));
    CHECK(h.env.deadline_changes > changes);
    REQUIRE(h.router.next_deadline().has_value());
    CHECK(*h.router.next_deadline() == h.env.now() + 5s);

    h.env.advance(4s);
    h.router.on_timer();
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.child_lines.empty());

    h.env.advance(1s);
    h.router.on_timer();
    const json cancel = parse(h.only_child_line());
    CHECK(cancel["method"] == "notifications/cancelled");
    CHECK(cancel["params"]["requestId"].dump() == raw_id_of(at_child));
    const std::string reply = h.only_line_to(1);
    CHECK(raw_id_of(reply) == R"("slow")");
    CHECK(error_code_of(reply) == -32603);
    CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(), Contains("request_timeout"));
    CHECK(h.router.in_flight() == 0);
    CHECK_FALSE(h.router.next_deadline().has_value());

    // The late answer is dropped silently.
    h.answer(at_child);
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.notes.empty());
}

TEST_CASE("router: an answered request leaves no deadline behind", "[router]") {
    config::ServerConfig config = router_config();
    config.request_timeout = 5s;
    Running h(config);
    h.answer(h.forward(1, slow_call("1")));
    CHECK_FALSE(h.router.next_deadline().has_value());
    h.env.advance(10s);
    h.router.on_timer();
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":1,"result":{}})");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: without request_timeout requests wait as long as the child works", "[router]") {
    Running h;
    h.forward(1, slow_call("1"));
    CHECK_FALSE(h.router.next_deadline().has_value());
}

TEST_CASE("router: tasks/result is not cut short by request_timeout", "[router]") {
    // tasks/result blocks until the task is terminal: no short timeout applies to it.
    config::ServerConfig config = router_config();
    config.request_timeout = 5s;
    Running h(config);
    h.answer(
        h.forward(
            1,
            R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"task":{"ttl":600000}}})"),
        R"({"task":{"taskId":"t-1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":600000}})");
    h.env.clear_records();
    const std::string waiting = h.forward(
        1, R"({"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"t-1"}})");
    h.env.advance(60s);
    h.router.on_timer();
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());
    h.answer(waiting, R"({"content":[]})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":2,"result":{"content":[]}})");
}
