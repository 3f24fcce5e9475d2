// Router, either era: what passes through untouched but for the id (docs/MULTIPLEXING.md,
// "Every message type"):
// completion, paginated lists with their cursors; and the pings that are mcpd's own business.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/server/handshake.h"
#include "fake_router_environment.h"
#include "handshake_recorder.h"

using namespace mcpd;
using namespace mcpd::testing;

namespace {

// Sessions 1 and 2 on a legacy child (initialized) or a modern one (requests carry _meta).
struct Attached : RouterHarness {
    explicit Attached(bool modern_child) : modern(modern_child) {
        if (modern) {
            modern_child_ready();
            router.attach(1);
            router.attach(2);
        } else {
            child_ready();
            connect(1);
            connect(2);
        }
        env.clear_records();
        env.next_child_id = 100;
    }

    // A request as a client of the child's era writes it; `params` without braces.
    std::string request(const std::string& raw_id, const std::string& method,
                        const std::string& params) const {
        if (modern) return modern_request(raw_id, method, params);
        return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"method":")" + method +
               R"(","params":{)" + params + "}}";
    }

    bool modern;
};

std::string result_line(const std::string& raw_id, const std::string& result) {
    return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"result":)" + result + "}";
}

// A router environment drawing child ids from the counter the handshake uses, as the daemon's
// does (one counter per child process).
struct SharedIdsEnvironment : FakeRouterEnvironment {
    explicit SharedIdsEnvironment(ChildIds& shared) : ids(shared) {}
    std::uint64_t child_next_id() override { return ids.next(); }
    ChildIds& ids;
};

}  // namespace

TEST_CASE("router passthrough: completion/complete is forwarded and answered with the own id",
          "[router][passthrough]") {
    const bool modern = GENERATE(false, true);
    Attached h(modern);
    const std::string params =
        R"("ref":{"type":"ref/prompt","name":"code_review"},"argument":{"name":"language","value":"py"},"context":{"arguments":{"x":"1"}})";
    const std::string at_child_1 = h.forward(1, h.request("1", "completion/complete", params));
    const std::string at_child_2 = h.forward(2, h.request("1", "completion/complete", params));
    CHECK(at_child_1 == h.request("100", "completion/complete", params));
    CHECK(at_child_2 == h.request("101", "completion/complete", params));

    const std::string result =
        R"({"completion":{"values":["python","pytorch"],"total":2,"hasMore":false}})";
    h.from_child(result_line("101", result));
    CHECK(h.only_line_to(2) == result_line("1", result));
    CHECK(h.env.sent_to(1).empty());
    h.from_child(
        R"({"jsonrpc":"2.0","id":100,"error":{"code":-32602,"message":"no such prompt"}})");
    CHECK(h.only_line_to(1) ==
          R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no such prompt"}})");
    CHECK(h.router.in_flight() == 0);
}

TEST_CASE("router passthrough: list cursors and nextCursor pass byte for byte",
          "[router][passthrough]") {
    const bool modern = GENERATE(false, true);
    const std::string method =
        GENERATE(std::string("tools/list"), std::string("resources/list"),
                 std::string("prompts/list"), std::string("resources/templates/list"));
    const std::string cursor = GENERATE(std::string(R"("")"), std::string(R"("eyJwIjoyfQ==")"),
                                        std::string(R"("a\/b\u00e9\"c")"));
    Attached h(modern);
    const std::string id = R"("page")";
    const std::string params = R"("cursor":)" + cursor;
    CHECK(h.forward(1, h.request(id, method, params)) == h.request("100", method, params));

    const std::string list = method == "tools/list"       ? "tools"
                             : method == "resources/list" ? "resources"
                             : method == "prompts/list"   ? "prompts"
                                                          : "resourceTemplates";
    const std::string result = R"({"resultType":"complete",")" + list +
                               R"(":[{"name":"x"}],"nextCursor":)" + cursor +
                               R"(,"ttlMs":0,"cacheScope":"private"})";
    h.from_child(result_line("100", result));
    CHECK(h.only_line_to(1) == result_line(id, result));
    CHECK(h.env.sent_to(2).empty());
}

TEST_CASE("router passthrough: mcpd's health pings and the child's pings never reach a session",
          "[router][passthrough]") {
    // The daemon hands the child's lines to the Handshake first (ManagedServer::
    // on_child_message): a ping request, and an answer to an id the handshake owns, are its;
    // everything else goes to the router. This drives the same pair over one id counter.
    const bool modern = GENERATE(false, true);
    HandshakeRecorder hs;
    SharedIdsEnvironment env(hs.ids);
    Router router(router_config(), env, env, kTestMaxMessage);
    wire::EnvelopeScanner scanner(kTestMaxMessage);
    auto from_child = [&](std::string line) {
        wire::Envelope e;
        REQUIRE(scanner.scan(line, e) == wire::ScanStatus::ok);
        const json message = parse(line);
        const bool owned = e.is_response() && message["id"].is_number_unsigned() &&
                           hs.handshake.owns(message["id"].get<std::uint64_t>());
        if ((e.is_request() && e.method == "ping") || owned) {
            CHECK(hs.handshake.handle(message));
            return;
        }
        router.on_child_message(line, e);
    };

    if (modern) {
        hs.handshake.begin_probe(json::object());
        from_child(result_line(hs.sent.at(0)["id"].dump(), demo_discover_result().dump()));
    } else {
        hs.handshake.begin(json::object());
        from_child(result_line(hs.sent.at(0)["id"].dump(), demo_initialize_result().dump()));
    }
    REQUIRE(hs.ready.has_value());
    router.on_child_ready(*hs.ready, hs.handshake.protocol_version(), hs.handshake.modern());
    router.attach(1);
    if (!modern) {
        std::string init =
            R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}})";
        router.on_session_line(1, init);
        std::string initialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
        router.on_session_line(1, initialized);
    }
    env.clear_records();
    hs.sent.clear();

    // A session's request is at the child when mcpd pings it.
    std::string call = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}})";
    router.on_session_line(1, call);
    REQUIRE(env.child_lines.size() == 1);
    const std::string session_child_id = raw_id_of(env.child_lines[0]);
    hs.handshake.send_ping();
    REQUIRE(hs.sent.size() == 1);
    const json ping = hs.sent[0];
    CHECK(ping["method"] == (modern ? "server/discover" : "ping"));  // modern has no ping
    CHECK(ping["id"].dump() != session_child_id);

    // Its answer is the handshake's: a pong, nothing for the session.
    from_child(
        result_line(ping["id"].dump(), modern ? demo_discover_result().dump() : std::string("{}")));
    CHECK(hs.pongs == 1);
    CHECK(env.sent_to(1).empty());

    // The child pings mcpd: answered at once with its id, nothing for the session.
    from_child(R"({"jsonrpc":"2.0","id":"child-ping-1","method":"ping"})");
    REQUIRE(hs.sent.size() == 2);
    CHECK(hs.sent[1] ==
          json{{"jsonrpc", "2.0"}, {"id", "child-ping-1"}, {"result", json::object()}});
    CHECK(env.sent_to(1).empty());

    // The session's own answer still comes through.
    from_child(result_line(session_child_id, R"({"content":[]})"));
    CHECK(env.sent_to(1) == std::vector<std::string>{result_line("1", R"({"content":[]})")});

    // Had a pong reached the router, it would have been dropped, not given to a session.
    env.clear_records();
    std::string stray = result_line(ping["id"].dump(), "{}");
    wire::Envelope e;
    REQUIRE(scanner.scan(stray, e) == wire::ScanStatus::ok);
    router.on_child_message(stray, e);
    CHECK(env.sent_to(1).empty());
    CHECK(env.notes.size() == 1);
}
