#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/mux/mcp_versions.h"
#include "daemon/server/handshake.h"
#include "handshake_recorder.h"

using namespace mcpd;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

struct Recorder : mcpd::testing::HandshakeRecorder {
    // Begin and return the initialize request it sent.
    json begin() {
        handshake.begin();
        REQUIRE(sent.size() == 1);
        return sent.back();
    }

    // The child's successful answer to request `id`.
    static json result_for(const json& id, const std::string& version) {
        return {{"jsonrpc", "2.0"},
                {"id", id},
                {"result",
                 {{"protocolVersion", version},
                  {"capabilities", {{"tools", json::object()}}},
                  {"serverInfo", {{"name", "demo"}, {"version", "1.0"}}}}}};
    }

    static json error_for(const json& id, json error) {
        return {{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
    }
};

}  // namespace

TEST_CASE("handshake: begin sends one initialize request in the current revision") {
    Recorder r;
    const json request = r.begin();
    CHECK(request["jsonrpc"] == "2.0");
    CHECK(request["method"] == "initialize");
    REQUIRE(request["id"].is_number_unsigned());
    CHECK(request["params"]["protocolVersion"] == "2025-11-25");
    CHECK(request["params"]["protocolVersion"] == legacy_protocol_versions().front());
    CHECK(request["params"]["capabilities"] == json::object());
    CHECK(request["params"]["clientInfo"]["name"] == "mcpd");
    CHECK(request["params"]["clientInfo"]["version"] == MCPD_VERSION);
    CHECK_FALSE(r.handshake.ready());
}

TEST_CASE("handshake: a good result makes it ready and sends notifications/initialized") {
    Recorder r;
    const json request = r.begin();
    const json reply = Recorder::result_for(request["id"], "2025-06-18");
    CHECK(r.handshake.handle(reply));
    CHECK(r.handshake.ready());
    CHECK(r.handshake.protocol_version() == "2025-06-18");
    REQUIRE(r.ready.has_value());
    CHECK(*r.ready == reply["result"]);
    CHECK(r.handshake.initialize_result() == reply["result"]);
    CHECK(r.failures.empty());
    REQUIRE(r.sent.size() == 2);
    CHECK(r.sent[1] == json{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    // The same reply again is no longer mcpd's business.
    CHECK_FALSE(r.handshake.handle(reply));
    CHECK(r.sent.size() == 2);
}

TEST_CASE("handshake: every revision mcpd lists is accepted") {
    const std::string version = GENERATE(from_range(legacy_protocol_versions()));
    Recorder r;
    const json request = r.begin();
    CHECK(r.handshake.handle(Recorder::result_for(request["id"], version)));
    CHECK(r.handshake.ready());
    CHECK(r.handshake.protocol_version() == version);
}

TEST_CASE("handshake: an error reply fails it with the server's message") {
    Recorder r;
    const json request = r.begin();
    CHECK(r.handshake.handle(Recorder::error_for(
        request["id"], {{"code", -32603}, {"message", "database unreachable"}})));
    CHECK_FALSE(r.handshake.ready());
    CHECK_FALSE(r.ready.has_value());
    REQUIRE(r.failures.size() == 1);
    CHECK_THAT(r.failures[0], Contains("refused initialize") && Contains("database unreachable"));
    CHECK(r.sent.size() == 1);
}

TEST_CASE("handshake: retries once with the newest revision the server lists") {
    Recorder r;
    const json first = r.begin();
    const json refusal = Recorder::error_for(
        first["id"], {{"code", -32602},
                      {"message", "Unsupported protocol version"},
                      {"data",
                       {{"supported", {"2024-11-05", "2025-06-18", "1999-01-01"}},
                        {"requested", "2025-11-25"}}}});
    CHECK(r.handshake.handle(refusal));
    CHECK(r.failures.empty());
    REQUIRE(r.sent.size() == 2);
    const json second = r.sent[1];
    CHECK(second["method"] == "initialize");
    CHECK(second["params"]["protocolVersion"] == "2025-06-18");
    CHECK(second["id"] != first["id"]);

    SECTION("and is ready when the retry succeeds") {
        CHECK(r.handshake.handle(Recorder::result_for(second["id"], "2025-06-18")));
        CHECK(r.handshake.ready());
        CHECK(r.handshake.protocol_version() == "2025-06-18");
    }
    SECTION("but not twice") {
        CHECK(r.handshake.handle(Recorder::error_for(second["id"], refusal["error"])));
        CHECK(r.sent.size() == 2);
        REQUIRE(r.failures.size() == 1);
        CHECK_THAT(r.failures[0], Contains("Unsupported protocol version"));
    }
}

TEST_CASE("handshake: no retry when the server lists no revision mcpd speaks") {
    Recorder r;
    const json request = r.begin();
    CHECK(r.handshake.handle(
        Recorder::error_for(request["id"], {{"code", -32602},
                                            {"message", "Unsupported protocol version"},
                                            {"data", {{"supported", {"1999-01-01", 7}}}}})));
    CHECK(r.sent.size() == 1);
    REQUIRE(r.failures.size() == 1);
    CHECK_THAT(r.failures[0], Contains("Unsupported protocol version"));
}

TEST_CASE("handshake: a result in an unknown revision or without one fails it") {
    Recorder r;
    const json request = r.begin();
    SECTION("unknown revision") {
        CHECK(r.handshake.handle(Recorder::result_for(request["id"], "2030-01-01")));
        REQUIRE(r.failures.size() == 1);
        CHECK_THAT(r.failures[0], Contains("2030-01-01") && Contains("does not speak"));
    }
    SECTION("no protocolVersion") {
        CHECK(r.handshake.handle(json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", {}}}));
        REQUIRE(r.failures.size() == 1);
        CHECK_THAT(r.failures[0], Contains("protocolVersion"));
    }
    SECTION("protocolVersion not a string") {
        json reply = Recorder::result_for(request["id"], "x");
        reply["result"]["protocolVersion"] = 20251125;
        CHECK(r.handshake.handle(reply));
        REQUIRE(r.failures.size() == 1);
    }
    CHECK_FALSE(r.handshake.ready());
    CHECK_FALSE(r.ready.has_value());
    CHECK(r.sent.size() == 1);
}

TEST_CASE("handshake: a ping from the child is answered at once with the same id") {
    const json id = GENERATE(json("abc-1"), json(7), json(0));
    Recorder r;
    r.begin();
    CHECK(r.handshake.handle(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "ping"}}));
    REQUIRE(r.sent.size() == 2);
    CHECK(r.sent[1] == json{{"jsonrpc", "2.0"}, {"id", id}, {"result", json::object()}});
    CHECK(r.sent[1]["id"].dump() == id.dump());  // "7" stays a number, "abc-1" a string
    CHECK(r.pongs == 0);
}

TEST_CASE("handshake: pongs are matched to mcpd's pings by id") {
    Recorder r;
    const json request = r.begin();
    CHECK(r.handshake.awaits_answers());  // the initialize's
    REQUIRE(r.handshake.handle(Recorder::result_for(request["id"], "2025-11-25")));
    // Ready with nothing of its own out: no child answer can be the handshake's.
    CHECK_FALSE(r.handshake.awaits_answers());
    CHECK_FALSE(r.handshake.owns(0));
    r.sent.clear();
    r.handshake.send_ping();
    r.handshake.send_ping();
    CHECK(r.handshake.awaits_answers());
    REQUIRE(r.sent.size() == 2);
    const json a = r.sent[0], b = r.sent[1];
    CHECK(a["method"] == "ping");
    CHECK(a["jsonrpc"] == "2.0");
    CHECK(a["id"] != b["id"]);
    CHECK(a["id"] != request["id"]);

    CHECK(
        r.handshake.handle(json{{"jsonrpc", "2.0"}, {"id", b["id"]}, {"result", json::object()}}));
    CHECK(r.pongs == 1);
    CHECK(
        r.handshake.handle(json{{"jsonrpc", "2.0"}, {"id", a["id"]}, {"result", json::object()}}));
    CHECK(r.pongs == 2);
    // Each pong counts once; an id mcpd never used is not a pong.
    CHECK_FALSE(
        r.handshake.handle(json{{"jsonrpc", "2.0"}, {"id", a["id"]}, {"result", json::object()}}));
    CHECK_FALSE(r.handshake.handle(json{{"jsonrpc", "2.0"}, {"id", 999}, {"result", {}}}));
    CHECK(r.pongs == 2);
    CHECK_FALSE(r.handshake.awaits_answers());
}

TEST_CASE("handshake: ids come from the shared counter and are never reused") {
    ChildIds ids;
    const std::uint64_t taken = ids.next();  // say, a session request routed earlier
    std::vector<json> sent;
    Handshake handshake(ids, {[&](std::string_view line) { sent.push_back(json::parse(line)); },
                              [](const json&) {}, [](std::string) {}, [] {}});
    handshake.begin();
    handshake.send_ping();
    REQUIRE(sent.size() == 2);
    CHECK(sent[0]["id"] != taken);
    CHECK(sent[1]["id"] != taken);
    CHECK(sent[0]["id"] != sent[1]["id"]);
    CHECK(ids.next() > sent[1]["id"].get<std::uint64_t>());
}

TEST_CASE("handshake: messages that are not mcpd's own are left for the sessions") {
    Recorder r;
    const json request = r.begin();
    const std::uint64_t own = request["id"].get<std::uint64_t>();
    const json others[] = {
        json{{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}},
        json{{"jsonrpc", "2.0"}, {"method", "notifications/message"}, {"params", {}}},
        json{{"jsonrpc", "2.0"}, {"id", 5}, {"method", "roots/list"}},
        json{{"jsonrpc", "2.0"}, {"method", "ping"}},  // a notification, not a request
        json{{"jsonrpc", "2.0"}, {"id", own + 100}, {"result", json::object()}},
        json{{"jsonrpc", "2.0"}, {"id", std::to_string(own)}, {"result", json::object()}},
        json{{"jsonrpc", "2.0"}, {"id", -1}, {"result", json::object()}},
        json::array({1, 2}),
        json("initialize"),
    };
    for (const json& message : others) {
        INFO(message.dump());
        CHECK_FALSE(r.handshake.handle(message));
    }
    CHECK(r.sent.size() == 1);
    CHECK(r.failures.empty());
    CHECK_FALSE(r.handshake.ready());
    CHECK(r.pongs == 0);
}

TEST_CASE("handshake: a probe error whose code is not a number falls back to initialize") {
    // The -32022 check used to read the code with a throwing accessor: a string code ended mcpd.
    for (const json& code : {json("-32022"), json(nullptr), json::array(), json::object(), json(1.5)}) {
        Recorder r;
        r.handshake.begin_probe(json::object());
        REQUIRE(r.sent.size() == 1);
        const json probe = r.sent.back();
        CHECK(probe["method"] == "server/discover");
        CHECK(r.handshake.handle(Recorder::error_for(probe["id"], {{"code", code}, {"message", "x"}})));
        CHECK(r.failures.empty());
        REQUIRE(r.sent.size() == 2);
        CHECK(r.sent.back()["method"] == "initialize");
    }
    // The real code still means "modern, but not a revision mcpd speaks".
    Recorder r;
    r.handshake.begin_probe(json::object());
    CHECK(r.handshake.handle(Recorder::error_for(r.sent.back()["id"], {{"code", -32022}, {"message", "x"}})));
    CHECK(r.failures.size() == 1);
}
