// Router: connection-wide state the sessions share (docs/MULTIPLEXING.md, "Legacy children")
// — log levels, resource subscriptions, broadcasts — and what a session's departure releases
// ("Both eras", cancellation).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"
#include "router_lines.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

struct Ready : RouterHarness {
    Ready() {
        child_ready();
        env.next_child_id = 100;
    }
};

std::string log_message(const std::string& level) {
    return R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":")" + level +
           R"(","logger":"demo","data":"something"}})";
}

// The level of a logging/setLevel request the child received.
std::string level_sent(const std::string& line) {
    const json j = parse(line);
    REQUIRE(j["method"] == "logging/setLevel");
    return j["params"]["level"].get<std::string>();
}

}  // namespace

// ---- logging ----

TEST_CASE("router: the child gets the most verbose level any session set", "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    const std::string first = h.forward(1, set_level(R"("L")", "info"));
    CHECK(first == set_level("100", "info"));
    h.answer(first);
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"L","result":{}})");

    // Less verbose than the child already is: answered here.
    h.send(2, set_level("7", "error"));
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":7,"result":{}})");
    CHECK(h.env.child_lines.empty());

    // More verbose: the child must hear it.
    const std::string second = h.forward(2, set_level("8", "debug"));
    CHECK(level_sent(second) == "debug");
    h.answer(second);
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":8,"result":{}})");

    // The most verbose session becomes quieter: the child follows the next one.
    h.send(2, set_level("9", "critical"));
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":9,"result":{}})");
    CHECK(level_sent(h.only_child_line()) == "info");
}

TEST_CASE("router: an unknown log level is refused", "[router]") {
    Ready h;
    h.connect(1);
    h.send(1, set_level("1", "verbose"));
    CHECK(error_code_of(h.only_line_to(1)) == -32602);
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a refused setLevel leaves the child's level unknown", "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    const std::string first = h.forward(1, set_level("1", "warning"));
    h.answer_error(first, -32602, "no");
    CHECK(error_code_of(h.only_line_to(1)) == -32602);
    // The next session's level is sent, not assumed.
    CHECK(level_sent(h.forward(2, set_level("2", "error"))) == "error");
}

TEST_CASE("router: log messages are filtered per session", "[router]") {
    Ready h;
    h.connect(1);        // debug
    h.connect(2);        // error
    h.connect(3);        // never sets a level: unfiltered
    h.router.attach(4);  // initialized but not ready
    h.send(
        4,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
    h.router.attach(5);  // not even initialized
    h.answer(h.forward(1, set_level("1", "debug")));
    h.send(2, set_level("1", "error"));
    h.env.clear_records();

    h.from_child(log_message("warning"));
    CHECK(h.only_line_to(1) == log_message("warning"));
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.only_line_to(3) == log_message("warning"));
    CHECK(h.env.sent_to(4).empty());
    CHECK(h.env.sent_to(5).empty());

    h.from_child(log_message("error"));
    CHECK(h.only_line_to(1) == log_message("error"));
    CHECK(h.only_line_to(2) == log_message("error"));
    CHECK(h.only_line_to(3) == log_message("error"));

    h.from_child(log_message("debug"));
    CHECK(h.only_line_to(1) == log_message("debug"));
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.only_line_to(3) == log_message("debug"));
}

TEST_CASE("router: when the most verbose session leaves, the child gets the next level",
          "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    h.connect(3);
    h.answer(h.forward(1, set_level("1", "debug")));
    h.send(2, set_level("1", "notice"));
    h.env.clear_records();

    h.router.detach(3);  // never set a level
    CHECK(h.env.child_lines.empty());
    h.router.detach(2);  // not the most verbose
    CHECK(h.env.child_lines.empty());

    h.connect(4);
    h.send(4, set_level("1", "alert"));
    h.env.clear_records();
    h.router.detach(1);
    CHECK(level_sent(h.only_child_line()) == "alert");
    CHECK(h.router.has_session(4));
}

TEST_CASE("router: a session that never set a level keeps its messages when others leave",
          "[router]") {
    Ready h;
    h.connect(1);  // debug
    h.connect(2);  // error
    h.connect(3);  // never sets a level: gets what the child sends
    h.answer(h.forward(1, set_level("1", "debug")));
    h.send(2, set_level("2", "error"));
    h.env.clear_records();

    // The most verbose leaves: the child stays at debug for session 3, whom nobody asked.
    h.router.detach(1);
    CHECK(h.env.child_lines.empty());
    h.from_child(log_message("debug"));
    CHECK(h.only_line_to(3) == log_message("debug"));
    CHECK(h.env.sent_to(2).empty());  // filtered to its own level

    // Nor does one asking for less, or a restart, take them from it: the level is re-applied.
    h.send(2, set_level("3", "critical"));
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":3,"result":{}})");
    CHECK(h.env.child_lines.empty());
    h.router.on_child_gone("crashed");
    h.env.clear_records();
    h.child_ready();
    std::string level;
    for (const std::string& line : h.env.child_lines) {
        if (parse(line)["method"] == "logging/setLevel") level = level_sent(line);
    }
    CHECK(level == "debug");

    // Once it has gone too, the child follows those who set a level.
    h.env.clear_records();
    h.router.detach(3);
    CHECK(level_sent(h.only_child_line()) == "critical");
}

// ---- subscriptions ----

TEST_CASE("router: subscriptions are counted per URI", "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    const std::string first = h.forward(1, subscribe(R"("s")", "demo://x"));
    CHECK(first == subscribe("100", "demo://x"));
    h.answer(first);
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"s","result":{}})");

    h.send(2, subscribe("3", "demo://x"));
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":3,"result":{}})");
    CHECK(h.env.child_lines.empty());

    // The first subscriber leaves the URI: the other still holds it.
    h.send(1, subscribe(R"("u")", "demo://x", false));
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"u","result":{}})");
    CHECK(h.env.child_lines.empty());
    h.from_child(updated("demo://x"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.only_line_to(2) == updated("demo://x"));

    // The last one: the child unsubscribes, and its answer is relayed.
    const std::string last = h.forward(2, subscribe("4", "demo://x", false));
    CHECK(last == subscribe("101", "demo://x", false));
    h.answer(last);
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":4,"result":{}})");
    h.from_child(updated("demo://x"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: unsubscribing a URI nobody holds does not reach the child", "[router]") {
    Ready h;
    h.connect(1);
    h.send(1, subscribe("1", "demo://never", false));
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":1,"result":{}})");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a subscribe without a uri is refused", "[router]") {
    Ready h;
    h.connect(1);
    h.send(1, R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{}})");
    CHECK(error_code_of(h.only_line_to(1)) == -32602);
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a subscribe the child refuses is not counted", "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    const std::string first = h.forward(1, subscribe("1", "demo://x"));
    h.answer_error(first, -32602, "no such resource");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no such resource"}})");
    h.from_child(updated("demo://x"));
    CHECK(h.env.sent_to(1).empty());
    // The next subscriber is the first again.
    const std::string second = h.forward(2, subscribe("2", "demo://x"));
    CHECK(parse(second)["method"] == "resources/subscribe");
}

TEST_CASE("router: resource updates go to subscribers of the URI or a parent", "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    h.connect(3);
    h.answer(h.forward(1, subscribe("1", "demo://x")));
    h.answer(h.forward(2, subscribe("1", "demo://x/child")));
    h.env.clear_records();

    h.from_child(updated("demo://x"));
    CHECK(h.only_line_to(1) == updated("demo://x"));
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.env.sent_to(3).empty());

    h.from_child(updated("demo://x/child"));
    CHECK(h.only_line_to(1) == updated("demo://x/child"));
    CHECK(h.only_line_to(2) == updated("demo://x/child"));
    CHECK(h.env.sent_to(3).empty());

    h.from_child(updated("demo://xy"));
    h.from_child(updated("demo://other"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.env.sent_to(3).empty());
}

TEST_CASE("router: a session holding a URI and its parent gets each update once", "[router]") {
    Ready h;
    h.connect(1);
    h.answer(h.forward(1, subscribe("1", "demo://x")));
    h.answer(h.forward(1, subscribe("2", "demo://x/child")));
    h.env.clear_records();
    h.from_child(updated("demo://x/child"));
    CHECK(h.only_line_to(1) == updated("demo://x/child"));
}

TEST_CASE("router: a session that is not ready gets no resource updates", "[router]") {
    // Lifecycle: no child traffic (resource updates included) before notifications/initialized.
    Ready h;
    h.router.attach(1);
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
    h.answer(h.forward(1, subscribe("1", "demo://x")));
    h.env.clear_records();
    h.from_child(updated("demo://x"));
    CHECK(h.env.sent_to(1).empty());
}

// ---- broadcasts ----

TEST_CASE("router: list_changed and unknown child notifications reach ready sessions only",
          "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    h.router.attach(3);  // attached, never initialized
    for (const std::string& line :
         {std::string(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"),
          std::string(R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed"})"),
          std::string(
              R"({"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{}})"),
          std::string(R"({"jsonrpc":"2.0","method":"x-vendor/heartbeat","params":{"n":1}})")}) {
        h.from_child(line);
        CHECK(h.only_line_to(1) == line);
        CHECK(h.only_line_to(2) == line);
        CHECK(h.env.sent_to(3).empty());
    }
    CHECK(h.env.child_lines.empty());
}

// ---- roots/list_changed from sessions ----

TEST_CASE("router: a session's roots/list_changed is swallowed when mcpd answers roots/list",
          "[router]") {
    config::ServerConfig config = router_config();
    config.roots = {"/srv/data"};
    RouterHarness h(config);
    h.child_ready();
    h.connect(1, "2025-11-25", {{"roots", {{"listChanged", true}}}});
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a session's roots/list_changed is not forwarded blindly", "[router]") {
    // Roots: forward only if mcpd declared roots.listChanged to the child; mcpd declares it
    // false (client_capabilities, daemon/mux/mcp_versions.cpp), so the child never asked for it.
    Ready h;
    h.connect(1, "2025-11-25", {{"roots", {{"listChanged", true}}}});
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
    CHECK(h.env.child_lines.empty());
}

// ---- a session leaves ----

TEST_CASE("router: a departing session's requests are cancelled at the child", "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    const std::string a = h.forward(
        1,
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"}}})");
    const std::string b = h.forward(1, R"({"jsonrpc":"2.0","id":"2","method":"tools/list"})");
    const std::string other = h.forward(2, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    h.router.detach(1);
    CHECK_FALSE(h.router.has_session(1));
    std::vector<std::string> cancelled;
    for (const std::string& line : h.env.child_lines) {
        const json j = parse(line);
        CHECK(j["method"] == "notifications/cancelled");
        CHECK_FALSE(j.contains("id"));
        cancelled.push_back(j["params"]["requestId"].dump());
    }
    std::sort(cancelled.begin(), cancelled.end());
    CHECK(cancelled == std::vector<std::string>{raw_id_of(a), raw_id_of(b)});
    CHECK(h.router.in_flight() == 1);

    // Late answers and progress for the departed session go nowhere, silently.
    h.env.clear_records();
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
        raw_progress_token_of(a) + R"(,"progress":1}})");
    h.answer(a);
    h.answer(b);
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
    CHECK(h.env.notes.empty());
    // The other session is unaffected.
    h.answer(other);
    CHECK(h.only_line_to(2) == R"({"jsonrpc":"2.0","id":1,"result":{}})");
}

TEST_CASE("router: a departing session's subscriptions are released", "[router]") {
    Ready h;
    h.connect(1);
    h.connect(2);
    h.answer(h.forward(1, subscribe("1", "demo://x")));
    h.send(2, subscribe("1", "demo://x"));
    h.answer(h.forward(2, subscribe("2", "demo://y")));
    h.env.clear_records();

    h.router.detach(1);
    CHECK(h.env.child_lines.empty());  // demo://x is still held by session 2

    h.router.detach(2);
    REQUIRE(h.env.child_lines.size() == 2);
    std::vector<std::string> uris;
    for (const std::string& line : h.env.child_lines) {
        const json j = parse(line);
        CHECK(j["method"] == "resources/unsubscribe");
        CHECK(j["id"].is_number_integer());
        uris.push_back(j["params"]["uri"].get<std::string>());
    }
    std::sort(uris.begin(), uris.end());
    CHECK(uris == std::vector<std::string>{"demo://x", "demo://y"});
    // The child's answers to mcpd's own unsubscribes go to nobody.
    const std::vector<std::string> sent = h.env.child_lines;
    for (const std::string& line : sent) h.answer(line);
    CHECK(h.env.session_lines.empty());
    CHECK(h.env.notes.empty());
}

TEST_CASE("router: lines a departed session left waiting are dropped", "[router]") {
    RouterHarness h;
    h.router.attach(1);
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
    h.send(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    h.router.detach(1);
    h.child_ready();
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());
    CHECK_FALSE(h.router.next_deadline().has_value());
}

TEST_CASE("router: lines from an unknown session are ignored", "[router]") {
    Ready h;
    h.send(42, R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
    h.router.detach(42);
    CHECK(h.env.session_lines.empty());
    CHECK(h.env.child_lines.empty());
}
