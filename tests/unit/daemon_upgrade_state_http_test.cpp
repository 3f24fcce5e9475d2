// The state an upgrade in place hands over, its HTTP part (docs/UPGRADE.md): the front door's
// connections with their bytes, and an HTTP session's exchanges, ids, replay buffer and held
// lines; read back as written, and one bad field refusing the whole state. The replay buffer
// carried answers a resumed stream as the one it was taken from.
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "daemon/http/sse.h"
#include "daemon/upgrade_state.h"
#include "fake_supervisor_environment.h"
#include "upgrade_state_checks.h"

using namespace mcpd;
using namespace mcpd::testing;
using nlohmann::json;

namespace {

// One server "web" with an HTTP session on it, and the front door with three connections: the
// session's streaming POST, its GET stream, and one idle with half a request read.
UpgradeState state_with_http() {
    UpgradeState state = base_state();
    state.http_listeners = {{"unix:/run/mcpd/mcpd-http.sock", 6}, {"127.0.0.1:8080", 7}};
    state.servers.push_back({"web", SupervisorFixture().sup.snapshot(), std::nullopt, CarriedRouter{}, std::nullopt, std::nullopt});
    state.next_session = 4;
    CarriedSession session;
    session.id = 3;
    session.server = "web";
    session.router.id = 3;
    session.router.protocol = "2025-06-18";
    CarriedHttpSession http;
    http.token = "m1.claims.signature";
    http.session_id = http.token;
    http.protocol = "2025-06-18";
    http.idle_ms = 1200;
    http.next_exchange = 5;
    http.exchanges.push_back({3, 21, true, false, false, {"\"long\""}, {}, ""});
    http.exchanges.push_back({4, 0, false, true, false, {"7"}, {std::string("{\"id\":6,\"result\":\"\xff\"}")}, ""});
    http.by_request = {{"\"long\"", 3}, {"7", 4}};
    http.by_progress = {{"\"tok\"", 3}};
    http.listener = 22;
    http.replay.last_id = 9;
    http.replay.dropped_through = 6;
    http.replay.events = {{7, "get", "id: 7\ndata: {}\n\n"}, {9, "get", "id: 9\ndata: {\"a\":1}\n\n"}};
    http.delivered = 9;
    http.held = {"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}"};
    http.swallow = {"\"mcpd-http-resume\""};
    session.http = http;
    state.sessions.push_back(session);
    CarriedHttpFront front;
    front.next_client = 30;
    front.serial = 12;
    front.deleted = {"m1.gone.sig"};
    front.connections.push_back({21, 10, "unix:/run/mcpd/mcpd-http.sock", "", "5\r\ndata:\r\n", true, true, true, false});
    front.connections.push_back({22, 11, "127.0.0.1:8080", "", "", true, true, true, false});
    front.connections.push_back({23, 12, "127.0.0.1:8080", "POST /mcp/web HTTP/1.1\r\nContent-Le", "", false, false, true, false});
    state.http = front;
    return state;
}

}  // namespace

TEST_CASE("upgrade state: the HTTP front door's connections and sessions round-trip, and a bad one refuses the state") {
    const UpgradeState state = state_with_http();
    const json body = to_json(state);
    const Result<UpgradeState> parsed = read_back(body);
    REQUIRE(parsed->http.has_value());
    CHECK(*parsed->http == *state.http);
    REQUIRE(parsed->sessions.size() == 1);
    REQUIRE(parsed->sessions[0].http.has_value());
    CHECK(*parsed->sessions[0].http == *state.sessions[0].http);
    // Kept across the exec: the listeners and the three connections, nothing for the session.
    std::vector<int> kept = kept_descriptors(parsed.value());
    std::sort(kept.begin(), kept.end());
    CHECK(kept == std::vector<int>{5, 6, 7, 10, 11, 12});

    const auto refused = [&](const std::function<void(json&)>& change) { return refusal_of(body, change); };
    CHECK_THAT(refused([](json& b) { b["http"]["connections"][0]["listener"] = "unix:/elsewhere"; }),
               Catch::Contains("accepted on no listener"));
    CHECK_THAT(refused([](json& b) { b["http"]["connections"][1]["fd"] = 5; }),
               Catch::Contains("descriptor is not one of its own"));
    CHECK_THAT(refused([](json& b) { b["http"]["connections"][1]["id"] = 21; }),
               Catch::Contains("given twice"));
    CHECK_THAT(refused([](json& b) { b["http"]["connections"][2]["id"] = 30; }),
               Catch::Contains("given twice or not given yet"));
    CHECK_THAT(refused([](json& b) { b["http"]["connections"][2]["received"] = "not base64!"; }),
               Catch::Contains("not base64url"));
    CHECK_THAT(refused([](json& b) { b["http"]["connections"][2]["streaming"] = true; }),
               Catch::Contains("streams an answer to no request"));
    CHECK_THAT(refused([](json& b) { b["http"]["connections"].erase(1); }),
               Catch::Contains("names a connection the state does not have"));
    CHECK_THAT(refused([](json& b) { b.erase("http"); }),
               Catch::Contains("without the HTTP front door's part"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["fd"] = 13; }),
               Catch::Contains("descriptors or bytes of its own"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["token"] = ""; }),
               Catch::Contains("no token"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["by_request"][0]["exchange"] = 9; }),
               Catch::Contains("names an exchange it does not have"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["exchanges"][1]["number"] = 3; }),
               Catch::Contains("given twice"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["exchanges"][1]["number"] = 5; }),
               Catch::Contains("not given yet"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["replay"]["events"][0]["id"] = 9; }),
               Catch::Contains("not numbered in order"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["replay"]["events"][0]["id"] = 6; }),
               Catch::Contains("not numbered in order"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["delivered"] = 10; }),
               Catch::Contains("after its last"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["held"] = {17}; }),
               Catch::Contains("held lines"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["listener"] = "22"; }),
               Catch::Contains("\"listener\""));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["http"]["exchanges"] = 1; }),
               Catch::Contains("\"exchanges\""));
}

TEST_CASE("a carried SSE replay buffer resumes a stream as the one it came from") {
    SseReplayBuffer before(200);
    for (int i = 0; i < 8; ++i) before.append("{\"n\":" + std::to_string(i) + "}", "get");
    SseReplayBuffer after(200);
    after.restore(before.carried());
    CHECK(after.last_id() == before.last_id());
    CHECK(after.bytes() == before.bytes());
    for (std::uint64_t last = 0; last <= before.last_id() + 1; ++last)
        CHECK(after.since(last, "get") == before.since(last, "get"));
    // Numbering goes on where it stopped.
    CHECK(after.append("{}", "get") == before.last_id() + 1);
    // A smaller bound in the new process drops the oldest first, as append would.
    SseReplayBuffer small(60);
    small.restore(before.carried());
    CHECK(small.bytes() <= 60);
    CHECK_FALSE(small.since(0, "get").has_value());
    CHECK(small.since(before.last_id() - 1, "get").has_value());
}
