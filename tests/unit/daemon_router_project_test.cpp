// sharing = "project", the router's part: after a session's initialized mcpd asks its client
// for its roots and holds its lines; the answer (or its absence) is reported; the session's
// lines are then handled here, moved to another child's router with nothing left behind, or
// failed.
#include <catch2/catch.hpp>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

config::ServerConfig project_config() {
    config::ServerConfig config = router_config();
    config.sharing = config::Sharing::project;
    return config;
}

const json kWithRoots = {{"roots", {{"listChanged", true}}}};

// Attach, initialize (with `capabilities`) and send initialized; what the session was sent
// is kept, the child's lines dropped.
void initialize_session(RouterHarness& h, SessionId id, const json& capabilities) {
    h.router.attach(id);
    h.send(id, json{{"jsonrpc", "2.0"},
                    {"id", 0},
                    {"method", "initialize"},
                    {"params",
                     {{"protocolVersion", "2025-11-25"},
                      {"capabilities", capabilities},
                      {"clientInfo", {{"name", "agent"}, {"version", "1"}}}}}}
                   .dump());
    h.send(id, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    h.env.child_lines.clear();
}

// The roots/list request mcpd sent session `id` (the last line it got).
std::string roots_request_to(RouterHarness& h, SessionId id) {
    const auto& lines = h.env.sent_to(id);
    REQUIRE_FALSE(lines.empty());
    const json request = parse(lines.back());
    CHECK(request["method"] == "roots/list");
    REQUIRE(request["id"].is_string());
    CHECK(request["id"].get<std::string>().starts_with("mcpd-roots-"));
    CHECK_FALSE(request.contains("params"));
    return request["id"].dump();
}

const std::string kCall =
    R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{}}})";

}  // namespace

TEST_CASE("a project session is asked its roots after initialized, and its lines wait",
          "[router][project]") {
    RouterHarness h(project_config());
    h.child_ready();
    initialize_session(h, 1, kWithRoots);
    const std::string asked = roots_request_to(h, 1);
    CHECK(h.router.awaiting_project(1));

    // Its requests and notifications reach no child while its project is open.
    h.send(1, kCall);
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})");
    CHECK(h.env.child_lines.empty());
    CHECK(h.env.project_reports.empty());

    // Its answer is reported as it came, and is not forwarded anywhere.
    h.send(1, R"({"jsonrpc":"2.0","id":)" + asked +
                  R"(,"result":{"roots":[{"uri":"file:///w/one","name":"one"}]}})");
    REQUIRE(h.env.project_reports.size() == 1);
    CHECK(h.env.project_reports[0].session == 1);
    CHECK(h.env.project_reports[0].roots_result ==
          json::parse(R"({"roots":[{"uri":"file:///w/one","name":"one"}]})"));
    CHECK(h.env.child_lines.empty());

    // Settled here: what it held is handled, in order.
    h.router.release_held(1);
    CHECK_FALSE(h.router.awaiting_project(1));
    const std::string call = h.only_child_line();
    CHECK(parse(call)["method"] == "tools/call");
    h.answer(call, R"({"content":[]})");
    CHECK(raw_id_of(h.env.sent_to(1).back()) == "7");
    // From now on lines go straight through.
    CHECK(parse(h.forward(1, kCall))["method"] == "tools/call");
}

TEST_CASE("a project session whose client has no roots, or does not answer, is reported so",
          "[router][project]") {
    RouterHarness h(project_config());
    h.child_ready();
    initialize_session(h, 1, json::object());
    // Nothing is asked of a client that declared no roots.
    for (const std::string& line : h.env.sent_to(1)) CHECK(parse(line).contains("result"));
    REQUIRE(h.env.project_reports.size() == 1);
    CHECK(h.env.project_reports[0].roots_result.is_null());
    CHECK(h.env.project_reports[0].why == "its client declared no roots");

    initialize_session(h, 2, kWithRoots);
    const std::string asked = roots_request_to(h, 2);
    h.send(2, kCall);
    h.env.advance(Router::kProjectWait - 1ms);
    h.router.on_timer();
    CHECK(h.env.project_reports.size() == 1);
    h.env.advance(1ms);
    REQUIRE(h.router.next_deadline());
    h.router.on_timer();
    REQUIRE(h.env.project_reports.size() == 2);
    CHECK(h.env.project_reports[1].session == 2);
    CHECK(h.env.project_reports[1].roots_result.is_null());
    CHECK(h.env.project_reports[1].why == "its client did not answer roots/list within 3s");
    // A late answer is held with the rest, and never reported twice.
    h.send(2, R"({"jsonrpc":"2.0","id":)" + asked + R"(,"result":{"roots":[]}})");
    CHECK(h.env.project_reports.size() == 2);
    CHECK(h.env.child_lines.empty());

    initialize_session(h, 3, kWithRoots);
    h.send(3, R"({"jsonrpc":"2.0","id":)" + roots_request_to(h, 3) +
                  R"(,"error":{"code":-32601,"message":"no"}})");
    REQUIRE(h.env.project_reports.size() == 3);
    CHECK(h.env.project_reports[2].why == "its client answered roots/list with an error");
}

TEST_CASE("a project session moves to its project's child with nothing left behind",
          "[router][project]") {
    RouterHarness lobby(project_config());  // the child that answered its initialize
    RouterHarness own(project_config());    // its project's child
    lobby.child_ready();
    own.child_ready();
    initialize_session(lobby, 1, kWithRoots);
    const std::string asked = roots_request_to(lobby, 1);
    lobby.send(1, R"({"jsonrpc":"2.0","id":"a","method":"logging/setLevel","params":{"level":"error"}})");
    lobby.send(1, kCall);
    lobby.send(1, R"({"jsonrpc":"2.0","id":)" + asked + R"(,"result":{"roots":[]}})");

    std::optional<Router::MovedSession> moved = lobby.router.release_session(1);
    REQUIRE(moved);
    CHECK_FALSE(lobby.router.has_session(1));
    CHECK(lobby.env.child_lines.empty());  // not even a cancellation: nothing was there
    CHECK(moved->client_name == "agent");
    CHECK(moved->protocol == "2025-11-25");
    CHECK(moved->held.size() == 2);

    own.router.adopt_session(std::move(*moved));
    CHECK(own.router.has_session(1));
    CHECK_FALSE(own.router.awaiting_project(1));
    // Its held lines reach its project's child, in order, with ids of that child's.
    REQUIRE(own.env.child_lines.size() == 2);
    CHECK(parse(own.env.child_lines[0])["method"] == "logging/setLevel");
    CHECK(parse(own.env.child_lines[1])["method"] == "tools/call");
    own.answer(own.env.child_lines[0]);
    own.answer(own.env.child_lines[1], R"({"content":[]})");
    const auto& to_session = own.env.sent_to(1);
    REQUIRE(to_session.size() == 2);
    CHECK(raw_id_of(to_session[0]) == "\"a\"");
    CHECK(raw_id_of(to_session[1]) == "7");
    // It is an initialized session there: its log level holds, and a new request goes through.
    CHECK(own.router.protocol_of(1) == "2025-11-25");
    CHECK(parse(own.forward(1, kCall))["method"] == "tools/call");
    // Nothing more is asked of it.
    for (const std::string& line : own.env.sent_to(1)) CHECK_FALSE(parse(line).contains("method"));
}

TEST_CASE("a project session that cannot be served has its held requests answered",
          "[router][project]") {
    RouterHarness h(project_config());
    h.child_ready();
    initialize_session(h, 1, json::object());
    h.env.session_lines.clear();
    h.send(1, kCall);
    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})");
    h.router.fail_held(1, "no child can be had");
    const json error = parse(h.only_line_to(1));
    CHECK(error["id"] == 7);
    CHECK(error["error"]["message"] == "no child can be had");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("a session of a shared server is never asked its roots", "[router][project]") {
    RouterHarness h;
    h.child_ready();
    initialize_session(h, 1, kWithRoots);
    for (const std::string& line : h.env.sent_to(1)) CHECK_FALSE(parse(line).contains("method"));
    CHECK(h.env.project_reports.empty());
    CHECK(parse(h.forward(1, kCall))["method"] == "tools/call");
}

TEST_CASE("a shared server whose sessions report different roots is told once to share by project",
          "[router][project]") {
    RouterHarness h;
    h.child_ready();
    initialize_session(h, 1, kWithRoots);
    initialize_session(h, 2, kWithRoots);
    // The child's roots/list goes to the only session with a request in flight: 1, then 2.
    const auto roots_round = [&h](SessionId id, const std::string& uri, int n) {
        const std::string call = h.forward(id, kCall);
        h.env.session_lines.clear();
        h.from_child(R"({"jsonrpc":"2.0","id":)" + std::to_string(100 + n) +
                     R"(,"method":"roots/list"})");
        const std::string asked = h.only_line_to(id);
        h.send(id, R"({"jsonrpc":"2.0","id":)" + raw_id_of(asked) +
                       R"(,"result":{"roots":[{"uri":")" + uri + R"("}]}})");
        CHECK(raw_id_of(h.only_child_line()) == std::to_string(100 + n));
        h.answer(call, R"({"content":[]})");
    };
    const auto told = [&h] {
        int n = 0;
        for (const std::string& note : h.env.notes)
            n += note.find("set sharing = \"project\"") != std::string::npos ? 1 : 0;
        return n;
    };
    roots_round(1, "file:///w/one", 1);
    roots_round(2, "file:///w/one/", 2);  // the same project, spelt otherwise
    CHECK(told() == 0);
    roots_round(2, "file:///w/two", 3);
    CHECK(told() == 1);
    roots_round(1, "file:///w/three", 4);
    CHECK(told() == 1);
    bool named = false;
    for (const std::string& note : h.env.notes)
        named = named || (note.find("/w/one and /w/two") != std::string::npos);
    CHECK(named);
}

TEST_CASE("a session whose roots change is asked again, and moves with a request in flight",
          "[router][project]") {
    RouterHarness old_child(project_config());
    RouterHarness new_child(project_config());
    old_child.child_ready();
    new_child.child_ready();
    initialize_session(old_child, 1, kWithRoots);
    initialize_session(old_child, 2, kWithRoots);
    for (SessionId id : {1, 2}) {
        old_child.send(id, R"({"jsonrpc":"2.0","id":)" + roots_request_to(old_child, id) +
                               R"(,"result":{"roots":[{"uri":"file:///w/one"}]}})");
        old_child.router.release_held(id);
    }
    old_child.send(1, R"({"jsonrpc":"2.0","id":"s","method":"resources/subscribe","params":{"uri":"demo://r"}})");
    old_child.answer(old_child.only_child_line());
    const std::string in_flight = old_child.forward(1, kCall);
    old_child.env.session_lines.clear();

    // Its roots change: mcpd asks again, and its new lines wait for the answer.
    old_child.send(1, R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})");
    const std::string asked = roots_request_to(old_child, 1);
    CHECK(old_child.env.child_lines.empty());  // the child is not told: the session may move
    old_child.send(1, R"({"jsonrpc":"2.0","id":8,"method":"tools/list"})");
    old_child.send(1, R"({"jsonrpc":"2.0","id":)" + asked +
                          R"(,"result":{"roots":[{"uri":"file:///w/two"}]}})");
    REQUIRE(old_child.env.project_reports.size() == 3);
    CHECK(old_child.env.project_reports[2].roots_result["roots"][0]["uri"] == "file:///w/two");
    CHECK(old_child.env.child_lines.empty());

    // It moves: its request in flight stays with the old child, not cancelled.
    std::optional<Router::MovedSession> moved = old_child.router.release_session(1);
    REQUIRE(moved);
    CHECK(moved->settled_before);
    CHECK(moved->subscriptions == std::set<std::string>{"demo://r"});
    CHECK(old_child.router.departed(1));
    old_child.env.session_lines.clear();
    // Its subscription is no longer the old child's business (nobody else held it).
    const json unsubscribe = parse(old_child.only_child_line());
    CHECK(unsubscribe["method"] == "resources/unsubscribe");

    new_child.router.adopt_session(std::move(*moved));
    // The new child: its subscription, then the held tools/list; the client re-reads lists.
    REQUIRE(new_child.env.child_lines.size() == 2);
    CHECK(parse(new_child.env.child_lines[0])["method"] == "resources/subscribe");
    CHECK(parse(new_child.env.child_lines[1])["method"] == "tools/list");
    std::vector<std::string> announced;
    for (const std::string& line : new_child.env.sent_to(1)) announced.push_back(parse(line)["method"]);
    CHECK(announced == std::vector<std::string>{"notifications/tools/list_changed",
                                                "notifications/resources/list_changed"});

    // The old child's broadcasts and logs no longer reach it; its answer does, byte for byte.
    old_child.from_child(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
    old_child.from_child(R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"error","data":"x"}})");
    CHECK(old_child.env.sent_to(1).empty());
    CHECK(old_child.env.sent_to(2).size() == 2);
    old_child.answer(in_flight, R"({"content":[{"type":"text","text":"done"}]})");
    REQUIRE(old_child.env.sent_to(1).size() == 1);
    CHECK(raw_id_of(old_child.env.sent_to(1)[0]) == "7");
    // Then it is gone from the old child, which is told.
    CHECK_FALSE(old_child.router.has_session(1));
    CHECK(old_child.env.departed_gone == std::vector<SessionId>{1});
    // Its answered call stays in the old child's totals; its session's counters went with it.
    CHECK(old_child.router.stats().total().replies == 2);  // the subscribe and the call
    std::vector<SessionId> counted;
    old_child.router.for_each_session_counters(
        [&](SessionId id, const CallCounters&) { counted.push_back(id); });
    CHECK(counted == std::vector<SessionId>{2});
}

TEST_CASE("a project child's roots/list is answered from its project, touching no session",
          "[router][project]") {
    config::ServerConfig config = project_config();
    config.roots = {"file:///w/one", "file:///w/My%20Two"};
    RouterHarness h(config);
    h.child_ready();
    initialize_session(h, 1, kWithRoots);
    h.env.session_lines.clear();
    h.from_child(R"({"jsonrpc":"2.0","id":41,"method":"roots/list"})");
    const json answer = parse(h.only_child_line());
    CHECK(answer["id"] == 41);
    CHECK(answer["result"]["roots"] ==
          json::parse(R"([{"uri":"file:///w/one"},{"uri":"file:///w/My%20Two"}])"));
    CHECK(h.env.session_lines[1].empty());
    // When the project's roots change, the child is told, and asks again.
    h.router.set_config([&] {
        config::ServerConfig next = config;
        next.roots = {"file:///w/three"};
        return next;
    }());
    h.router.roots_changed();
    CHECK(parse(h.only_child_line())["method"] == "notifications/roots/list_changed");
    h.from_child(R"({"jsonrpc":"2.0","id":42,"method":"roots/list"})");
    CHECK(parse(h.only_child_line())["result"]["roots"][0]["uri"] == "file:///w/three");
}

TEST_CASE("a moved session cancels its request in flight at the child it left",
          "[router][project]") {
    RouterHarness old_child(project_config());
    RouterHarness new_child(project_config());
    old_child.child_ready();
    new_child.child_ready();
    initialize_session(old_child, 1, json::object());
    old_child.router.release_held(1);
    const std::string in_flight = old_child.forward(1, kCall);
    std::optional<Router::MovedSession> moved = old_child.router.release_session(1);
    REQUIRE(moved);
    new_child.router.adopt_session(std::move(*moved));

    // The cancellation reaches the new child's router, which does not have the request...
    const std::string cancel =
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})";
    new_child.send(1, cancel);
    CHECK(new_child.env.child_lines.empty());
    REQUIRE(new_child.env.cancelled_elsewhere.size() == 1);
    CHECK(new_child.env.cancelled_elsewhere[0].first == 1);
    // ...and the daemon hands it to the old one, which cancels it at its child.
    old_child.router.cancel_for_departed(1, new_child.env.cancelled_elsewhere[0].second);
    const json sent = parse(old_child.only_child_line());
    CHECK(sent["method"] == "notifications/cancelled");
    CHECK(sent["params"]["requestId"].dump() == raw_id_of(in_flight));
    CHECK_FALSE(old_child.router.has_session(1));
    CHECK(old_child.env.departed_gone == std::vector<SessionId>{1});
    // A cancellation of something it never had there is not taken.
    old_child.router.cancel_for_departed(1, cancel);
    CHECK(old_child.env.child_lines.empty());
}
