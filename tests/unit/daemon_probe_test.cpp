// The era probe (server/discover before initialize) through the Handshake's interface: its
// outcomes, when its timer runs, late answers, exits. EraMemory, the verdict kept across a
// server's processes, is in daemon_era_memory_test.cpp.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/mux/mcp_versions.h"
#include "daemon/server/handshake.h"
#include "handshake_recorder.h"

using namespace mcpd;
using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// A handshake probing a child of unknown era, as ManagedServer does.
struct Probe : mcpd::testing::HandshakeRecorder {
    // Probe a child of unknown era, as ManagedServer does; returns the server/discover sent.
    json begin(Duration start_timeout = 30s) {
        handshake.begin_probe(client_capabilities, start_timeout);
        REQUIRE(sent.size() == 1);
        REQUIRE(sent[0]["method"] == "server/discover");
        return sent[0];
    }

    // The probe's timer expires (it must be armed).
    bool expire() {
        REQUIRE(timer.has_value());
        timer.reset();
        return handshake.probe_timed_out();
    }

    static json discover_result(const json& id, json versions = {"2026-07-28"}) {
        return {{"jsonrpc", "2.0"},
                {"id", id},
                {"result",
                 {{"resultType", "complete"},
                  {"supportedVersions", std::move(versions)},
                  {"capabilities", {{"tools", json::object()}}},
                  {"_meta",
                   {{"io.modelcontextprotocol/serverInfo", {{"name", "m"}, {"version", "1"}}}}}}}};
    }
    static json initialize_result(const json& id, const std::string& version = "2025-11-25") {
        return {{"jsonrpc", "2.0"},
                {"id", id},
                {"result",
                 {{"protocolVersion", version},
                  {"capabilities", json::object()},
                  {"serverInfo", {{"name", "l"}, {"version", "1"}}}}}};
    }
    static json error(const json& id, int code, const std::string& message = "no") {
        return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
    }

    std::vector<json> methods() const {
        std::vector<json> out;
        for (const json& m : sent) out.push_back(m.value("method", json()));
        return out;
    }
};

}  // namespace

TEST_CASE("probe: the discover request carries the modern _meta and no client capabilities") {
    Probe p;
    const json discover = p.begin();
    const json& meta = discover["params"]["_meta"];
    CHECK(meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28");
    CHECK(meta["io.modelcontextprotocol/clientCapabilities"] == json::object());
    CHECK(meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcpd");
    CHECK(p.handshake.probing());
    CHECK(p.handshake.exited_on_probe());
}

TEST_CASE("probe: a DiscoverResult means modern, ready at once, without initialize") {
    Probe p;
    const json discover = p.begin();
    SECTION("answered before any other sign of life") {}
    SECTION("answered after the child logged") {
        p.handshake.child_showed_life();
    }
    const json reply = Probe::discover_result(discover["id"], {"2025-99-99", "2026-07-28"});
    CHECK(p.handshake.handle(reply));
    REQUIRE(p.ready.has_value());
    CHECK(*p.ready == reply["result"]);
    CHECK(p.handshake.ready());
    CHECK(p.handshake.modern());
    CHECK(p.handshake.protocol_version() == "2026-07-28");
    CHECK(p.sent.size() == 1);  // no initialize, no notifications/initialized
    CHECK(p.failures.empty());
    CHECK_FALSE(p.timer.has_value());  // the probe's timer was cancelled
    CHECK_FALSE(p.handshake.probing());
    CHECK_FALSE(p.handshake.exited_on_probe());
    CHECK_FALSE(p.handshake.probe_timed_out());  // a stale expiry changes nothing
    CHECK(p.sent.size() == 1);
}

TEST_CASE("probe: a DiscoverResult without mcpd's revision fails, without falling back") {
    Probe p;
    const json discover = p.begin();
    CHECK(p.handshake.handle(Probe::discover_result(discover["id"], {"2027-01-01"})));
    REQUIRE(p.failures.size() == 1);
    CHECK_THAT(p.failures[0], Contains("2026-07-28"));
    CHECK_FALSE(p.handshake.ready());
    CHECK(p.sent.size() == 1);
}

TEST_CASE("probe: an unsupported-version error (-32022) is a modern server: fail, no initialize") {
    Probe p;
    const json discover = p.begin();
    json refusal = Probe::error(discover["id"], -32022, "Unsupported protocol version");
    refusal["error"]["data"] = {{"supported", {"2027-01-01"}}, {"requested", "2026-07-28"}};
    CHECK(p.handshake.handle(refusal));
    REQUIRE(p.failures.size() == 1);
    CHECK_THAT(p.failures[0],
               Contains("modern") && Contains("2026-07-28") && Contains("2027-01-01"));
    CHECK(p.sent.size() == 1);
    CHECK_FALSE(p.handshake.ready());
    CHECK_FALSE(p.timer.has_value());
    CHECK_FALSE(p.handshake.probing());
}

TEST_CASE("probe: any other error is a legacy server: initialize follows at once") {
    const int code = GENERATE(-32601, -32602, -32600, -32603, 1);
    Probe p;
    const json discover = p.begin();
    CHECK(p.handshake.handle(Probe::error(discover["id"], code)));
    CHECK(p.failures.empty());
    REQUIRE(p.sent.size() == 2);
    const json& initialize = p.sent[1];
    CHECK(initialize["method"] == "initialize");
    CHECK(initialize["params"]["protocolVersion"] == "2025-11-25");
    CHECK(initialize["params"]["capabilities"] == client_capabilities("2025-11-25"));
    CHECK_FALSE(p.timer.has_value());
    // The probe was answered: an exit from now on is a crash, not an exit on the probe.
    CHECK_FALSE(p.handshake.exited_on_probe());
    CHECK(p.handshake.handle(Probe::initialize_result(initialize["id"])));
    CHECK(p.handshake.ready());
    CHECK_FALSE(p.handshake.modern());
}

TEST_CASE("probe: silence counts only once the child has shown life") {
    Probe p;
    p.begin(30s);
    // Nothing from the child yet: it may still be starting (npx, a JVM). Only a long wait, half
    // of start_timeout, ends the probe.
    REQUIRE(p.timer == Duration(15s));
    // Its first line (stdout or stderr): from now on two seconds of silence mean legacy.
    p.handshake.child_showed_life();
    CHECK(p.timer == Duration(kProbeSilence));
    CHECK(kProbeSilence == 2s);
    // Later lines do not push the deadline back.
    const std::size_t calls = p.timer_calls.size();
    p.handshake.child_showed_life();
    p.handshake.child_showed_life();
    CHECK(p.timer_calls.size() == calls);
    CHECK(p.methods() == std::vector<json>{"server/discover"});
    CHECK(p.expire());
    REQUIRE(p.methods() == std::vector<json>{"server/discover", "initialize"});
    CHECK(p.sent[1]["params"]["capabilities"] == client_capabilities("2025-11-25"));
    // Not a verdict yet: an exit now is still an exit on the probe.
    CHECK(p.handshake.probing());
    CHECK(p.handshake.exited_on_probe());
    CHECK(p.handshake.handle(Probe::initialize_result(p.sent[1]["id"], "2025-06-18")));
    CHECK(p.handshake.ready());
    CHECK_FALSE(p.handshake.modern());
    CHECK(p.handshake.protocol_version() == "2025-06-18");
    CHECK_FALSE(p.handshake.exited_on_probe());
}

TEST_CASE("probe: a child that never shows life falls back after half of start_timeout") {
    Probe p;
    p.begin(10s);
    CHECK(p.timer == Duration(5s));
    CHECK(p.expire());
    CHECK(p.methods() == std::vector<json>{"server/discover", "initialize"});
    CHECK_FALSE(p.timer.has_value());
    // Life after the fallback arms nothing more.
    p.handshake.child_showed_life();
    CHECK_FALSE(p.timer.has_value());
    CHECK_FALSE(p.handshake.probe_timed_out());
    CHECK(p.sent.size() == 2);
}

TEST_CASE("probe: a short start_timeout shortens the silence too") {
    Probe p;
    p.begin(1s);
    CHECK(p.timer == Duration(500ms));
    p.handshake.child_showed_life();
    CHECK(p.timer == Duration(500ms));
}

TEST_CASE("probe: a late DiscoverResult still decides, and the initialize is abandoned") {
    Probe p;
    const json discover = p.begin();
    p.handshake.child_showed_life();  // it logged early, then took long to read stdin
    REQUIRE(p.expire());
    const json initialize = p.sent.at(1);
    // A modern server reads stdin in order: the probe's answer comes first.
    CHECK(p.handshake.handle(Probe::discover_result(discover["id"])));
    CHECK(p.handshake.ready());
    CHECK(p.handshake.modern());
    CHECK(p.handshake.protocol_version() == "2026-07-28");
    CHECK(p.failures.empty());
    // Its refusal of initialize is mcpd's to swallow, once: not a failure, not for the sessions.
    CHECK(p.handshake.owns(initialize["id"].get<std::uint64_t>()));
    CHECK(p.handshake.handle(Probe::error(initialize["id"], -32601, "initialize is legacy")));
    CHECK(p.failures.empty());
    CHECK(p.handshake.ready());
    CHECK_FALSE(p.handshake.owns(initialize["id"].get<std::uint64_t>()));
    CHECK_FALSE(p.handshake.handle(Probe::error(initialize["id"], -32601)));
    CHECK(p.sent.size() == 2);  // no notifications/initialized
}

TEST_CASE("probe: a late -32022 still means modern without mcpd's revision") {
    Probe p;
    const json discover = p.begin();
    REQUIRE(p.expire());
    CHECK(p.handshake.handle(Probe::error(discover["id"], -32022, "Unsupported protocol version")));
    REQUIRE(p.failures.size() == 1);
    CHECK_THAT(p.failures[0], Contains("modern"));
    CHECK_FALSE(p.handshake.ready());
}

TEST_CASE("probe: a late error changes nothing: the initialize already sent decides") {
    Probe p;
    const json discover = p.begin();
    REQUIRE(p.expire());
    CHECK(p.handshake.handle(Probe::error(discover["id"], -32601)));
    CHECK(p.sent.size() == 2);  // no second initialize
    CHECK(p.failures.empty());
    CHECK_FALSE(p.handshake.exited_on_probe());  // answered: an exit now is a crash
    CHECK(p.handshake.handle(Probe::initialize_result(p.sent[1]["id"])));
    CHECK(p.handshake.ready());
    CHECK_FALSE(p.handshake.modern());
}

TEST_CASE("probe: an answer to the probe after the legacy handshake is swallowed") {
    Probe p;
    const json discover = p.begin();
    REQUIRE(p.expire());
    REQUIRE(p.handshake.handle(Probe::initialize_result(p.sent[1]["id"])));
    REQUIRE(p.handshake.ready());
    const std::size_t sent = p.sent.size();
    const json late =
        GENERATE_COPY(Probe::error(discover["id"], -32601), Probe::discover_result(discover["id"]));
    CHECK(p.handshake.handle(late));
    CHECK_FALSE(p.handshake.modern());
    CHECK(p.handshake.protocol_version() == "2025-11-25");
    CHECK(p.failures.empty());
    CHECK(p.sent.size() == sent);
    // Once: the same id again is not mcpd's.
    CHECK_FALSE(p.handshake.handle(late));
}

TEST_CASE("probe: an exit counts as an exit on the probe until the probe is answered") {
    Probe p;
    const json discover = p.begin();
    CHECK(p.handshake.exited_on_probe());  // silent so far
    p.handshake.child_showed_life();
    CHECK(p.handshake.exited_on_probe());  // logging, but no answer
    SECTION("after the fallback, the child having answered nothing") {
        REQUIRE(p.expire());
        CHECK(p.handshake.exited_on_probe());
    }
    SECTION("not once it answered the probe") {
        REQUIRE(p.handshake.handle(Probe::error(discover["id"], -32601)));
        CHECK_FALSE(p.handshake.exited_on_probe());
    }
    SECTION("not once it answered initialize after the fallback") {
        REQUIRE(p.expire());
        REQUIRE(p.handshake.handle(Probe::initialize_result(p.sent[1]["id"])));
        CHECK_FALSE(p.handshake.exited_on_probe());
    }
}

TEST_CASE("probe: a child known to be modern gets server/discover without any timing") {
    Probe p;
    p.handshake.begin_probe(client_capabilities);
    REQUIRE(p.sent.size() == 1);
    CHECK(p.sent[0]["method"] == "server/discover");
    CHECK(p.timer_calls.empty());
    p.handshake.child_showed_life();
    CHECK(p.timer_calls.empty());
    CHECK_FALSE(p.handshake.probe_timed_out());
    CHECK(p.sent.size() == 1);
    // Its era is known, so an exit is a crash.
    CHECK(p.handshake.probing());
    CHECK_FALSE(p.handshake.exited_on_probe());
    CHECK(p.handshake.handle(Probe::discover_result(p.sent[0]["id"])));
    CHECK(p.handshake.modern());
}
