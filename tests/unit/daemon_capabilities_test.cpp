// What mcpd declares to a child as its client capabilities: for each protocol revision,
// exactly the members and sub-capabilities that revision's schema defines for what mcpd routes
// (schema/<version>/schema.ts, ClientCapabilities), and the same in the initialize it sends.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/mux/mcp_versions.h"
#include "daemon/server/handshake.h"

using namespace mcpd;
using nlohmann::json;

namespace {

const json kEmpty = json::object();

// The members each revision defines for ClientCapabilities (never `experimental`, which mcpd
// has none of, nor 2025-11-25's `tasks`, which mcpd does not relay).
std::vector<std::string> keys(const json& object) {
    std::vector<std::string> out;
    for (const auto& [key, value] : object.items()) out.push_back(key);
    return out;
}

}  // namespace

TEST_CASE("capabilities: 2024-11-05 and 2025-03-26 declare roots and sampling only") {
    const std::string version = GENERATE("2024-11-05", "2025-03-26");
    const json declared = client_capabilities(version);
    CHECK(declared == json{{"roots", {{"listChanged", false}}}, {"sampling", kEmpty}});
    CHECK_FALSE(declared.contains("elicitation"));  // from 2025-06-18
    CHECK_FALSE(declared.contains("extensions"));   // from 2026-07-28
}

TEST_CASE("capabilities: 2025-06-18 adds elicitation, still without modes") {
    const json declared = client_capabilities("2025-06-18");
    CHECK(declared ==
          json{{"roots", {{"listChanged", false}}}, {"sampling", kEmpty}, {"elicitation", kEmpty}});
}

TEST_CASE(
    "capabilities: 2025-11-25 declares sampling.tools and .context, elicitation form and url") {
    const json declared = client_capabilities("2025-11-25");
    CHECK(declared == json{{"roots", {{"listChanged", false}}},
                           {"sampling", {{"context", kEmpty}, {"tools", kEmpty}}},
                           {"elicitation", {{"form", kEmpty}, {"url", kEmpty}}}});
    // An empty elicitation object would mean "form only" in this revision: url must be named.
    CHECK(declared["elicitation"].contains("url"));
    CHECK_FALSE(declared.contains("tasks"));
    CHECK_FALSE(declared.contains("extensions"));
}

TEST_CASE(
    "capabilities: every legacy revision mcpd speaks declares roots.listChanged as a boolean") {
    for (const std::string& version : legacy_protocol_versions()) {
        INFO(version);
        const json declared = client_capabilities(version);
        REQUIRE(declared.contains("roots"));
        CHECK(keys(declared["roots"]) == std::vector<std::string>{"listChanged"});
        CHECK(declared["roots"]["listChanged"].is_boolean());
        CHECK_FALSE(declared.contains("experimental"));
    }
}

TEST_CASE("capabilities: 2026-07-28 declares nothing for mcpd's own server/discover") {
    // No server→client requests exist; each session's request carries its own capabilities.
    const json declared = client_capabilities(kModernProtocolVersion);
    CHECK(declared == kEmpty);
}

TEST_CASE(
    "capabilities: initialize declares the object of the revision it asks for, retry included") {
    ChildIds ids;
    std::vector<json> sent;
    Handshake handshake(ids, {[&](std::string_view line) { sent.push_back(json::parse(line)); },
                              [](const json&) {}, [](std::string) {}, [] {}});
    handshake.begin(client_capabilities);
    REQUIRE(sent.size() == 1);
    CHECK(sent[0]["params"]["protocolVersion"] == "2025-11-25");
    CHECK(sent[0]["params"]["capabilities"] == client_capabilities("2025-11-25"));

    // The server speaks only an older revision: the retry declares that revision's object.
    const std::string older = GENERATE("2025-06-18", "2025-03-26", "2024-11-05");
    CHECK(handshake.handle(json{{"jsonrpc", "2.0"},
                                {"id", sent[0]["id"]},
                                {"error",
                                 {{"code", -32602},
                                  {"message", "Unsupported protocol version"},
                                  {"data", {{"supported", {older}}}}}}}));
    REQUIRE(sent.size() == 2);
    CHECK(sent[1]["params"]["protocolVersion"] == older);
    CHECK(sent[1]["params"]["capabilities"] == client_capabilities(older));
    CHECK(sent[1]["params"]["capabilities"] != client_capabilities("2025-11-25"));
}

TEST_CASE("capabilities: the probe's fallback initialize declares the 2025-11-25 object") {
    ChildIds ids;
    std::vector<json> sent;
    Handshake handshake(ids, {[&](std::string_view line) { sent.push_back(json::parse(line)); },
                              [](const json&) {}, [](std::string) {}, [] {}});
    handshake.begin_probe(client_capabilities, std::chrono::seconds(30));
    REQUIRE(sent.size() == 1);
    CHECK(sent[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == kEmpty);
    CHECK(handshake.handle(json{{"jsonrpc", "2.0"},
                                {"id", sent[0]["id"]},
                                {"error", {{"code", -32601}, {"message", "Method not found"}}}}));
    REQUIRE(sent.size() == 2);
    CHECK(sent[1]["params"]["capabilities"] == client_capabilities("2025-11-25"));
}
