// The pure parts of group_attach: the specs of the three kinds of group session and the
// ad-hoc group's name as a path names it (/mcp/A+B over HTTP).
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "daemon/group_attach.h"

using namespace mcpd;

TEST_CASE("an ad-hoc group's name: servers joined by '+', each once", "[group]") {
    using Members = std::optional<std::vector<std::string>>;
    CHECK(adhoc_members("github+filesystem") == Members({"github", "filesystem"}));
    CHECK(adhoc_members("a.b+c_d+e-f") == Members({"a.b", "c_d", "e-f"}));
    // Not an ad-hoc group: one name (a server or a registry group).
    CHECK_FALSE(adhoc_members("github"));
    // No list of different server names.
    for (const char* bad : {"a+a", "a+", "+a", "a++b", "+", "a+b/c", "a+b c", "a+\xc3\xa9"}) {
        INFO(bad);
        CHECK_FALSE(adhoc_members(bad));
    }
    std::string many = "s0";
    for (int i = 1; i < 64; ++i) many += "+s" + std::to_string(i);
    CHECK(adhoc_members(many)->size() == 64);
    CHECK_FALSE(adhoc_members(many + "+s64"));
    // As the socket's ad-hoc group: named by the join, every member prefixed.
    const GroupSpec spec = adhoc_group(*adhoc_members("github+filesystem"));
    CHECK(spec.name == "github+filesystem");
    CHECK(spec.prefix);
    REQUIRE(spec.members.size() == 2);
    CHECK(spec.members[1].server == "filesystem");
}
