// Router: requests the child sends to sessions (docs/MULTIPLEXING.md, "Legacy children",
// server → client requests; "Server → session requests") and task ownership ("Both eras",
// tasks): routed only when the owner is certain, declined otherwise, never broadcast; ids
// mapped both ways byte for byte.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fake_router_environment.h"
#include "router_clients.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

using Clients = ClientPair;

// What the child was told when its request was declined.
void check_declined(RouterHarness& h, const std::string& raw_id, const std::string& method) {
    const std::string reply = h.only_child_line();
    INFO(reply);
    CHECK(raw_id_of(reply) == raw_id);
    const json j = parse(reply);
    if (method == "elicitation/create") {
        CHECK(j["result"] == json{{"action", "cancel"}});
    } else if (method == "sampling/createMessage") {
        CHECK(j["error"]["code"] == -1);
    } else {
        CHECK(j["error"]["code"] == -32601);
    }
    CHECK_FALSE(h.env.notes.empty());
}

}  // namespace

TEST_CASE("router: a child request goes to the only session with requests in flight", "[router]") {
    for (const std::string& child_id :
         {std::string(R"("srv-1")"), std::string("7"), std::string("12345678901234567890"),
          std::string(R"("a\"b")")}) {
        DYNAMIC_SECTION("child id " << child_id) {
            Clients h;
            h.busy(1);
            const std::string request =
                child_request(child_id, "sampling/createMessage", kSamplingParams);
            h.from_child(request);
            CHECK(h.env.child_lines.empty());
            CHECK(h.env.sent_to(2).empty());
            const std::string at_session = h.only_line_to(1);
            const std::string session_id = raw_id_of(at_session);
            CHECK(session_id.front() == '"');  // an mcpd string id
            CHECK(session_id != child_id);
            CHECK(at_session ==
                  child_request(session_id, "sampling/createMessage", kSamplingParams));

            const std::string result =
                R"({"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"})";
            h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":)" + result + "}");
            CHECK(h.only_child_line() ==
                  R"({"jsonrpc":"2.0","id":)" + child_id + R"(,"result":)" + result + "}");
            // Answered once: a second answer goes nowhere.
            h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":)" + result + "}");
            CHECK(h.env.child_lines.empty());
        }
    }
}

TEST_CASE("router: each child request gets its own session-side id", "[router]") {
    Clients h;
    h.busy(1);
    h.from_child(child_request("1", "roots/list"));
    h.from_child(child_request("2", "roots/list"));
    const auto& lines = h.env.sent_to(1);
    REQUIRE(lines.size() == 2);
    CHECK(raw_id_of(lines[0]) != raw_id_of(lines[1]));
    // Errors from the session are mapped back as well.
    h.send(1, R"({"jsonrpc":"2.0","id":)" + raw_id_of(lines[1]) +
                  R"(,"error":{"code":-32603,"message":"no roots"}})");
    CHECK(h.only_child_line() ==
          R"({"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"no roots"}})");
}

TEST_CASE("router: an unknown child request is routed like sampling", "[router]") {
    Clients h;
    h.busy(2);
    const std::string request = child_request(R"("x")", "x-vendor/ask", R"({"q":1})");
    h.from_child(request);
    const std::string at_session = h.only_line_to(2);
    CHECK(at_session == child_request(raw_id_of(at_session), "x-vendor/ask", R"({"q":1})"));
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: an unattributable child request is declined, never broadcast", "[router]") {
    for (const std::string& method :
         {std::string("sampling/createMessage"), std::string("elicitation/create"),
          std::string("roots/list"), std::string("x-vendor/ask")}) {
        for (const std::string& situation :
             {std::string("two sessions busy"), std::string("no session busy"),
              std::string("no session at all")}) {
            DYNAMIC_SECTION(method << " with " << situation) {
                Clients h;
                if (situation == "two sessions busy") {
                    h.busy(1);
                    h.busy(2);
                } else if (situation == "no session at all") {
                    h.router.detach(1);
                    h.router.detach(2);
                }
                h.env.clear_records();
                h.from_child(child_request(R"("c\"1")", method, R"({"message":"m"})"));
                check_declined(h, R"("c\"1")", method);
                CHECK(h.env.sent_to(1).empty());
                CHECK(h.env.sent_to(2).empty());
            }
        }
    }
}

TEST_CASE("router: a child request to a session without roots is refused -32601", "[router]") {
    Clients h(json{{"sampling", json::object()}});
    h.busy(1);
    h.from_child(child_request("5", "roots/list"));
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == "5");
    CHECK(error_code_of(reply) == -32601);
    CHECK(h.env.sent_to(1).empty());
}

TEST_CASE("router: sampling to a session without the sampling capability is -32601", "[router]") {
    // Capability gating (docs/MULTIPLEXING.md, "Legacy children"): sampling → -32601.
    Clients h(json{{"roots", json::object()}});
    h.busy(1);
    h.from_child(child_request("5", "sampling/createMessage", kSamplingParams));
    CHECK(h.env.sent_to(1).empty());
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == "5");
    CHECK(error_code_of(reply) == -32601);
}

TEST_CASE("router: elicitation to a session without the elicitation capability is -32602",
          "[router]") {
    // Capability gating: an elicitation mode not declared → -32602.
    Clients h(json{{"sampling", json::object()}});
    h.busy(1);
    h.from_child(child_request("5", "elicitation/create",
                               R"({"message":"name?","requestedSchema":{"type":"object"}})"));
    CHECK(h.env.sent_to(1).empty());
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == "5");
    CHECK(error_code_of(reply) == -32602);
}

TEST_CASE("router: sampling with tools needs the session's sampling.tools", "[router]") {
    // Capability gating: sampling with tools needs sampling.tools.
    Clients h(json{{"sampling", json::object()}});
    h.busy(1);
    h.from_child(child_request(
        "5", "sampling/createMessage",
        R"({"messages":[],"maxTokens":10,"tools":[{"name":"t","inputSchema":{"type":"object"}}]})"));
    CHECK(h.env.sent_to(1).empty());
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == "5");
    CHECK(error_code_of(reply) == -32601);
}

TEST_CASE("router: URL-mode elicitation needs the session's elicitation.url", "[router]") {
    // Capability gating: an elicitation mode not declared → -32602.
    Clients h(json{{"elicitation", {{"form", json::object()}}}});
    h.busy(1);
    h.from_child(child_request(
        "5", "elicitation/create",
        R"({"mode":"url","elicitationId":"e1","url":"https://example.com/x","message":"go"})"));
    CHECK(h.env.sent_to(1).empty());
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == "5");
    CHECK(error_code_of(reply) == -32602);
}

TEST_CASE("router: elicitation is not sent to a session whose revision lacks it", "[router]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1, "2025-03-26", kAllClientCapabilities);
    h.forward(1, R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})");
    h.from_child(child_request("5", "elicitation/create", R"({"message":"m"})"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(raw_id_of(h.only_child_line()) == "5");
}

TEST_CASE("router: roots/list is answered from the registry when roots are configured",
          "[router]") {
    config::ServerConfig config = router_config();
    config.roots = {"/srv/data", "file:///home/me/project"};
    Clients h(kAllClientCapabilities, config);
    h.busy(1);
    h.from_child(child_request(R"("r\"1")", "roots/list"));
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == R"("r\"1")");
    CHECK(
        parse(reply)["result"] ==
        json::parse(R"({"roots":[{"uri":"file:///srv/data"},{"uri":"file:///home/me/project"}]})"));
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: only the session a child request went to can answer it", "[router]") {
    Clients h;
    h.busy(1);
    h.from_child(child_request(R"("srv")", "roots/list"));
    const std::string session_id = raw_id_of(h.only_line_to(1));
    h.send(2, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{"roots":[]}})");
    CHECK(h.env.child_lines.empty());
    h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{"roots":[]}})");
    CHECK(h.only_child_line() == R"({"jsonrpc":"2.0","id":"srv","result":{"roots":[]}})");
}

TEST_CASE("router: the child cancelling its request reaches that session", "[router]") {
    Clients h;
    h.busy(1);
    h.from_child(child_request(R"("srv-9")", "sampling/createMessage", kSamplingParams));
    const std::string session_id = raw_id_of(h.only_line_to(1));
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"srv-9","reason":"took too long"}})");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)" +
              session_id + R"(,"reason":"took too long"}})");
    CHECK(h.env.sent_to(2).empty());
    // The session answers anyway: the child is not bothered.
    h.send(1, R"({"jsonrpc":"2.0","id":)" + session_id + R"(,"result":{}})");
    CHECK(h.env.child_lines.empty());
    // A cancellation for a request the child never sent goes nowhere.
    h.from_child(
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"srv-9"}})");
    CHECK(h.env.sent_to(1).empty());
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router: a session leaving with a child request pending answers the child", "[router]") {
    Clients h;
    h.busy(1);
    h.from_child(child_request("12345678901234567890", "elicitation/create", R"({"message":"m"})"));
    REQUIRE(h.env.sent_to(1).size() == 1);
    h.env.clear_records();
    h.router.detach(1);
    bool answered = false;
    for (const std::string& line : h.env.child_lines) {
        const json j = parse(line);
        if (!j.contains("id")) continue;  // the cancellation of its own request
        CHECK(raw_id_of(line) == "12345678901234567890");
        CHECK(j["error"]["code"] == -32603);
        answered = true;
    }
    CHECK(answered);
}

TEST_CASE("router: a session reports progress only on a child request it was sent", "[router]") {
    // Progress: forward only if the token belongs to a child request routed to *this* session.
    Clients h;
    const std::string a = h.busy(1);
    h.from_child(child_request(R"("s1")", "sampling/createMessage",
                               R"({"messages":[],"maxTokens":1,"_meta":{"progressToken":"tA"}})"));
    REQUIRE(h.env.sent_to(1).size() == 1);
    h.answer(a);  // session 1 no longer has requests at the child
    h.busy(2);
    h.from_child(child_request(R"("s2")", "sampling/createMessage",
                               R"({"messages":[],"maxTokens":1,"_meta":{"progressToken":"tB"}})"));
    REQUIRE(h.env.sent_to(2).size() == 1);
    h.env.clear_records();

    const std::string own =
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tA","progress":1}})";
    const std::string others =
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tB","progress":1}})";
    h.send(1, own);
    CHECK(h.only_child_line() == own);
    h.send(1, others);
    CHECK(h.env.child_lines.empty());
    h.send(2, others);
    CHECK(h.only_child_line() == others);
}

TEST_CASE("router: a session without child requests cannot send progress", "[router]") {
    Clients h;
    h.send(
        1,
        R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}})");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a session's task status notification is dropped", "[router]") {
    // Tasks: mcpd never declares client tasks, so a session never acts as a task receiver.
    Clients h;
    h.send(
        1,
        R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"x","status":"working","createdAt":"2025-01-01T00:00:00Z","lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":1000}})");
    CHECK(h.env.child_lines.empty());
}

TEST_CASE("router: a session answering a child request with a CreateTaskResult is refused",
          "[router]") {
    // Tasks: a CreateTaskResult from a session is an unusable answer (the child gets -32603).
    Clients h;
    h.busy(1);
    h.from_child(child_request(R"("s1")", "sampling/createMessage", kSamplingParams));
    const std::string session_id = raw_id_of(h.only_line_to(1));
    h.send(
        1,
        R"({"jsonrpc":"2.0","id":)" + session_id +
            R"(,"result":{"task":{"taskId":"client-task","status":"working","createdAt":"2025-01-01T00:00:00Z","lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":1000}}})");
    const std::string reply = h.only_child_line();
    CHECK(raw_id_of(reply) == R"("s1")");
    CHECK(error_code_of(reply) == -32603);
}
