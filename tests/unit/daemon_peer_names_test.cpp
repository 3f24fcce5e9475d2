// The caps on names peers choose (daemon/mux/peer_names.h): cut at a character's boundary,
// MCP's methods counted by name and nothing else, and a bounded list of a child's tools.
#include <catch2/catch.hpp>
#include <string>

#include "daemon/mux/peer_names.h"

using namespace mcpd;

TEST_CASE("a name is cut to its cap at a character's boundary", "[names]") {
    CHECK(cut_to("echo", kMaxNameBytes) == "echo");
    CHECK(cut_to(std::string(kMaxNameBytes, 'a'), kMaxNameBytes).size() == kMaxNameBytes);
    CHECK(cut_to(std::string(kMaxNameBytes + 1, 'a'), kMaxNameBytes).size() == kMaxNameBytes);
    // "é" is two bytes: a cut through it keeps neither.
    const std::string accents = std::string(kMaxNameBytes - 1, 'a') + "\xC3\xA9" + "b";
    CHECK(cut_to(accents, kMaxNameBytes) == std::string(kMaxNameBytes - 1, 'a'));
    // A four-byte character cut after its second byte.
    CHECK(cut_to("ab\xF0\x9F\x98\x80", 4) == "ab");
    CHECK(cut_to("ab\xF0\x9F\x98\x80", 6) == "ab\xF0\x9F\x98\x80");
}

TEST_CASE("MCP's methods are counted by name, any other as unlisted", "[names]") {
    for (const char* method :
         {"tools/call", "tools/list", "prompts/get", "resources/read", "resources/templates/list",
          "completion/complete", "ping", "logging/setLevel", "tasks/result", "server/discover"}) {
        INFO(method);
        CHECK(counted_method(method) == method);
    }
    CHECK(counted_method("no/such/method") == kUnlisted);
    CHECK(counted_method("") == kUnlisted);
    CHECK(counted_method("tools/call ") == kUnlisted);
    CHECK(counted_method(std::string(100000, 'm')) == kUnlisted);
}

TEST_CASE("a child's listed names are bounded in length and number", "[names]") {
    ListedNames listed;
    listed.add("echo");
    listed.add("");
    listed.add(std::string(kMaxNameBytes, 'n'));
    listed.add(std::string(kMaxNameBytes + 1, 'n'));  // too long: never listed
    CHECK(listed.contains("echo"));
    CHECK(listed.contains(std::string(kMaxNameBytes, 'n')));
    CHECK(!listed.contains(std::string(kMaxNameBytes + 1, 'n')));
    CHECK(listed.size() == 2);
    for (std::size_t i = 0; i < kMaxListedNames + 100; ++i) listed.add("tool_" + std::to_string(i));
    CHECK(listed.size() == kMaxListedNames);
    listed.clear();
    CHECK(listed.size() == 0);
}
