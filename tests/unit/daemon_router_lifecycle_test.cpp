// Router: framing and validation of session lines, and the legacy lifecycle
// (docs/MULTIPLEXING.md, "Both eras", validation; "Legacy children", initialize and ping):
// what is refused, what is answered locally, what waits for the child.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using Catch::Matchers::Contains;

namespace {

struct BadLine {
    const char* what;
    std::string line;
    int code;
    const char* reply_id;  // raw id expected on the error
};

// Lines a session may not send: each gets one error, and the child never sees anything.
std::vector<BadLine> bad_lines() {
    return {
        {"not JSON", "hello there", -32700, "null"},
        {"truncated object", R"({"jsonrpc":"2.0","id":1,"method":"tools/list")", -32700, "null"},
        {"not UTF-8 in a string",
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}",
         -32700, "null"},
        {"not UTF-8 (overlong) in a key",
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"\xc0\xaf\":1}}", -32700,
         "null"},
        {"raw control character in a string",
         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\x01list\"}", -32700, "null"},
        {"trailing garbage", R"({"jsonrpc":"2.0","id":1,"method":"tools/list"} x)", -32700, "null"},
        {"two objects on one line",
         R"({"jsonrpc":"2.0","id":1,"method":"tools/list"}{"jsonrpc":"2.0","id":2,"method":"x"})",
         -32700, "null"},
        {"bad escape", R"({"jsonrpc":"2.0","id":1,"method":"a\qb"})", -32700, "null"},
        {"batch", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", -32600, "null"},
        {"empty batch", "[]", -32600, "null"},
        {"number", "42", -32600, "null"},
        {"string", R"("hello")", -32600, "null"},
        {"null", "null", -32600, "null"},
        {"jsonrpc missing", R"({"id":1,"method":"tools/list"})", -32600, "1"},
        {"jsonrpc 1.0", R"({"jsonrpc":"1.0","id":"a","method":"tools/list"})", -32600, R"("a")"},
        {"jsonrpc as a number", R"({"jsonrpc":2.0,"id":1,"method":"tools/list"})", -32600, "1"},
        {"id null", R"({"jsonrpc":"2.0","id":null,"method":"tools/list"})", -32600, "null"},
        {"id 1.5", R"({"jsonrpc":"2.0","id":1.5,"method":"tools/list"})", -32600, "null"},
        {"id 1.0", R"({"jsonrpc":"2.0","id":1.0,"method":"tools/list"})", -32600, "null"},
        {"id 1e2", R"({"jsonrpc":"2.0","id":1e2,"method":"tools/list"})", -32600, "null"},
        {"id object", R"({"jsonrpc":"2.0","id":{},"method":"tools/list"})", -32600, "null"},
        {"id array", R"({"jsonrpc":"2.0","id":[1],"method":"tools/list"})", -32600, "null"},
        {"id boolean", R"({"jsonrpc":"2.0","id":true,"method":"tools/list"})", -32600, "null"},
        {"neither request nor response", R"({"jsonrpc":"2.0","id":3})", -32600, "3"},
    };
}

// Lines the scanner or the router take for valid today, though validation ("Both eras")
// refuses them.
std::vector<BadLine> malformed_lines() {
    return {
        {"broken array (invalid JSON, not a batch)", "[1,}", -32700, "null"},
        {"a bare word that starts like null", "nope", -32700, "null"},
        {"a number with a leading zero in params",
         R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n":01}})", -32700, "null"},
        {"an id with a leading zero", R"({"jsonrpc":"2.0","id":01,"method":"tools/list"})", -32700,
         "null"},
        {"method not a string", R"({"jsonrpc":"2.0","id":4,"method":5})", -32600, "4"},
        {"params a scalar", R"({"jsonrpc":"2.0","id":5,"method":"tools/list","params":5})", -32600,
         "5"},
    };
}

void check_refused(const BadLine& bad) {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.send(1, bad.line);
    CHECK(h.env.child_lines.empty());
    const std::string reply = h.only_line_to(1);
    INFO(reply);
    CHECK(error_code_of(reply) == bad.code);
    CHECK(raw_id_of(reply) == bad.reply_id);
    CHECK(parse(reply)["jsonrpc"] == "2.0");
}

}  // namespace

TEST_CASE("router: invalid session lines are refused and never reach the child", "[router]") {
    for (const BadLine& bad : bad_lines()) {
        DYNAMIC_SECTION(bad.what) {
            check_refused(bad);
        }
    }
}

TEST_CASE("router: malformed lines that look like JSON are refused too", "[router]") {
    // Validation: non-JSON -32700, non-JSON-RPC shapes -32600, nothing invalid reaches the child.
    for (const BadLine& bad : malformed_lines()) {
        DYNAMIC_SECTION(bad.what) {
            check_refused(bad);
        }
    }
}

TEST_CASE("router: invalid lines are refused at once even while the child starts", "[router]") {
    RouterHarness h;
    h.router.attach(1);
    h.send(1, "{not json");
    h.send(1, R"({"jsonrpc":"2.0","id":null,"method":"tools/list"})");
    const auto& lines = h.env.sent_to(1);
    REQUIRE(lines.size() == 2);
    CHECK(error_code_of(lines[0]) == -32700);
    CHECK(error_code_of(lines[1]) == -32600);
    h.child_ready();
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).size() == 2);
}

TEST_CASE("router: a session's id is never smuggled to the child through a duplicate key",
          "[router]") {
    // Ids: every id a session sends is replaced. A child whose parser keeps the first "id"
    // would answer with the session's own id 5, which may be another session's mcpd id (cross
    // talk): every id token must be rewritten, or the line refused.
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.env.next_child_id = 100;
    h.send(1, R"({"jsonrpc":"2.0","id":5,"id":6,"method":"tools/list"})");
    for (const std::string& line : h.env.child_lines) {
        INFO(line);
        CHECK(line.find(R"("id":5)") == std::string::npos);
        CHECK(line.find(R"("id":6)") == std::string::npos);
    }
}

TEST_CASE("router: before the child is ready, lines wait and the child is wanted", "[router]") {
    RouterHarness h;
    h.router.attach(1);
    CHECK(h.env.want_child_calls >= 1);
    const int wanted = h.env.want_child_calls;
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"a","version":"1"}}})");
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    h.send(1, R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
    CHECK(h.env.want_child_calls > wanted);
    CHECK(h.env.deadline_changes > 0);
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.child_lines.empty());
    REQUIRE(h.router.next_deadline().has_value());

    h.env.next_child_id = 50;
    h.child_ready("2025-11-25");
    const auto& lines = h.env.sent_to(1);
    REQUIRE(lines.size() == 1);
    CHECK(raw_id_of(lines[0]) == R"("i")");
    CHECK(parse(lines[0])["result"]["protocolVersion"] == "2025-06-18");
    // In order: the queued request went to the child after the local initialize answer.
    CHECK(h.only_child_line() == R"({"jsonrpc":"2.0","id":50,"method":"tools/list"})");
    CHECK_FALSE(h.router.next_deadline().has_value());
}

TEST_CASE("router: attaching while the child is ready does not ask for a child", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.router.attach(1);
    CHECK(h.env.want_child_calls == 0);
    CHECK(h.router.has_session(1));
    CHECK(h.router.session_count() == 1);
}

TEST_CASE("router: ping is answered locally at any time", "[router]") {
    RouterHarness h;
    SECTION("before the child exists and before initialize") {
        h.router.attach(1);
        h.send(1, R"({"jsonrpc":"2.0","id":"p\"1","method":"ping"})");
        CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":"p\"1","result":{}})");
    }
    SECTION("after initialization") {
        h.child_ready();
        h.connect(1);
        h.send(1, R"({"jsonrpc":"2.0","id":12345678901234567890,"method":"ping","params":{}})");
        CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":12345678901234567890,"result":{}})");
    }
    SECTION("while the child restarts") {
        h.child_ready();
        h.connect(1);
        h.router.on_child_gone("crashed");
        h.send(1, R"({"jsonrpc":"2.0","id":9,"method":"ping"})");
        CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","id":9,"result":{}})");
    }
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: initialize is answered from the child's cached result", "[router]") {
    struct Case {
        const char* requested;
        const char* child;
        const char* expected;
    };
    const std::vector<Case> cases = {
        {"2025-06-18", "2025-11-25", "2025-06-18"},  // known and older: the session's own
        {"2025-11-25", "2025-11-25", "2025-11-25"}, {"2024-11-05", "2025-03-26", "2024-11-05"},
        {"2025-11-25", "2025-06-18", "2025-06-18"},  // newer than the child: the child's
        {"2099-01-01", "2025-11-25", "2025-11-25"},  // unknown to mcpd: the child's
        {"1999-01-01", "2025-11-25", "2025-11-25"},  // unknown (even if older): the child's
        {"", "2025-03-26", "2025-03-26"},            // none given: the child's
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION("session asks " << c.requested << ", child speaks " << c.child) {
            RouterHarness h;
            h.child_ready(c.child);
            h.router.attach(1);
            json params = {{"capabilities", {{"sampling", json::object()}}},
                           {"clientInfo", {{"name", "agent"}, {"version", "9"}}}};
            if (*c.requested != '\0') params["protocolVersion"] = c.requested;
            const json init = {
                {"jsonrpc", "2.0"}, {"id", "init"}, {"method", "initialize"}, {"params", params}};
            h.send(1, init.dump());
            const std::string reply = h.only_line_to(1);
            CHECK(raw_id_of(reply) == R"("init")");
            const json result = parse(reply)["result"];
            CHECK(result["protocolVersion"] == c.expected);
            CHECK(result["serverInfo"] == demo_initialize_result()["serverInfo"]);
            CHECK(result["instructions"] == "use the tools");
            CHECK(result["capabilities"]["tools"] == json{{"listChanged", true}});
            CHECK(result["capabilities"]["resources"]["subscribe"] == true);
            CHECK(result["capabilities"]["logging"] == json::object());
            // Every session's tasks share the child, and a listing is trimmed to the
            // session's own: tasks.list is offered as the child offers it.
            CHECK(result["capabilities"]["tasks"].contains("list"));
            CHECK(result["capabilities"]["tasks"].contains("cancel"));
            CHECK(h.env.child_lines.empty());

            const auto summaries = h.router.summaries();
            REQUIRE(summaries.size() == 1);
            CHECK(summaries[0].client_name == "agent");
            CHECK(summaries[0].client_version == "9");
            CHECK(summaries[0].protocol == c.expected);
        }
    }
}

TEST_CASE("router: a second initialize is refused and the session keeps working", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1, "2025-06-18");
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":"again","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"2"}}})");
    const std::string reply = h.only_line_to(1);
    CHECK(error_code_of(reply) == -32600);
    CHECK(raw_id_of(reply) == R"("again")");
    CHECK(h.env.child_lines.empty());
    CHECK(h.router.summaries()[0].protocol == "2025-06-18");
    CHECK(h.router.summaries()[0].client_name == "client-1");
    h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
}

TEST_CASE("router: requests before initialize are refused", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.router.attach(1);
    h.send(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    std::string reply = h.only_line_to(1);
    CHECK(error_code_of(reply) == -32600);
    CHECK(raw_id_of(reply) == "1");
    CHECK_THAT(parse(reply)["error"]["message"].get<std::string>(), Contains("initialize"));

    SECTION("server/discover gets method-not-found so a dual-era client falls back") {
        h.send(1, R"({"jsonrpc":"2.0","id":"d","method":"server/discover","params":{}})");
        reply = h.only_line_to(1);
        CHECK(error_code_of(reply) == -32601);
        CHECK(raw_id_of(reply) == R"("d")");
    }
    SECTION("also when the request waited for the child") {
        RouterHarness q;
        q.router.attach(1);
        q.send(1, R"({"jsonrpc":"2.0","id":"early","method":"resources/list"})");
        CHECK(q.env.sent_to(1).empty());
        q.child_ready();
        reply = q.only_line_to(1);
        CHECK(error_code_of(reply) == -32600);
        CHECK(raw_id_of(reply) == R"("early")");
        CHECK(q.env.child_lines.empty());
    }
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: notifications/initialized is swallowed and makes the session ready",
          "[router]") {
    RouterHarness h;
    h.child_ready();
    h.router.attach(1);
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})");
    h.env.clear_records();
    // Initialized but not ready: connection-wide traffic is not routed to it yet.
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(h.env.sent_to(1).empty());

    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.sent_to(1).empty());
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(h.only_line_to(1) == R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
}

TEST_CASE("router: notifications/initialized before initialize does not make a session ready",
          "[router]") {
    RouterHarness h;
    h.child_ready();
    h.router.attach(1);
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    CHECK(h.env.child_lines.empty());
    h.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: summaries count each session's requests in flight", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.connect(2, "2025-06-18");
    const std::string first = h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
    h.forward(1, R"({"jsonrpc":"2.0","id":2,"method":"prompts/list"})");
    auto summaries = h.router.summaries();
    REQUIRE(summaries.size() == 2);
    CHECK(summaries[0].id == 1);
    CHECK(summaries[0].attached_at == h.env.now());
    CHECK(summaries[0].in_flight == 2);
    CHECK(summaries[1].in_flight == 0);
    CHECK(summaries[1].protocol == "2025-06-18");
    CHECK(h.router.in_flight() == 2);
    h.answer(first);
    CHECK(h.router.summaries()[0].in_flight == 1);
    CHECK(h.router.in_flight() == 1);
}
