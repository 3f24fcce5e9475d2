// [groups.NAME] tables and the tools/prompts/resources filters of servers, groups and members.
#include <catch2/catch.hpp>
#include <string>

#include "config/registry.h"
#include "config/registry_group.h"
#include "registry_parse.h"

using namespace mcpd::config;

namespace {

constexpr std::string_view kTwoServers = R"([servers.github]
command = "gh-mcp"

[servers.memory]
command = "mem-mcp"
)";

}  // namespace

TEST_CASE("a group lists servers, filters and per-member filters", "[registry][groups]") {
    const LoadResult result = parse(std::string(kTwoServers) + R"(
[groups.dev]
servers = ["github", "memory"]
separator = "_x_"
exclude_tools = ["delete_*"]

[groups.dev.github]
tools = ["create_*", "get_*"]
resources = ["repo://*"]
)");
    INFO(describe(result));
    REQUIRE(result.registry.has_value());
    REQUIRE(result.registry->groups.size() == 1);
    const GroupConfig& group = result.registry->groups.front();
    CHECK(group.name == "dev");
    CHECK(group.separator == "_x_");
    REQUIRE(group.members.size() == 2);
    CHECK(group.members[0].server == "github");
    CHECK(group.members[1].server == "memory");
    CHECK(group.filters.tools.exclude == std::vector<std::string>{"delete_*"});
    CHECK(group.members[0].filters.tools.allow == std::vector<std::string>{"create_*", "get_*"});
    CHECK(group.members[0].filters.resources.allow == std::vector<std::string>{"repo://*"});
    CHECK(group.members[1].filters.empty());
    CHECK(result.registry->find_group("dev") == &group);
    CHECK(result.registry->find_group("github") == nullptr);
}

TEST_CASE("a group's separator defaults to two underscores", "[registry][groups]") {
    const LoadResult result =
        parse(std::string(kTwoServers) + "[groups.g]\nservers = [\"memory\"]\n");
    REQUIRE(result.registry.has_value());
    CHECK(result.registry->groups.front().separator == "__");
}

TEST_CASE("a group named like a server is an error at the group, naming the server's line",
          "[registry][groups]") {
    const ConfigError error = only_error(
        parse(std::string(kTwoServers) + "\n[groups.memory]\nservers = [\"github\"]\n"));
    CHECK(error.line == 7);
    CHECK(error.column == 1);
    CHECK(contains(error.message, "group 'memory' has the name of the server declared at line 4"));
}

TEST_CASE("a group member that is no server is an error at its element", "[registry][groups]") {
    const ConfigError error =
        only_error(parse(std::string(kTwoServers) + "[groups.g]\nservers = [\"github\", \"gitlab\"]\n"));
    CHECK(error.line == 7);
    CHECK(error.column == 22);
    CHECK(contains(error.message, "\"gitlab\", which is no server of the registry"));
}

TEST_CASE("a group cannot hold a group", "[registry][groups]") {
    const LoadResult result = parse(std::string(kTwoServers) +
                                    "[groups.a]\nservers = [\"github\"]\n"
                                    "[groups.b]\nservers = [\"a\"]\n");
    const ConfigError error = only_error(result);
    CHECK(contains(error.message, "which is a group: a group's members are servers"));
}

TEST_CASE("group mistakes are reported with their position", "[registry][groups]") {
    SECTION("no servers") {
        const ConfigError error = only_error(parse("[groups.g]\ntools = [\"a\"]\n"));
        CHECK(contains(error.message, "group 'g' has no 'servers'"));
    }
    SECTION("an empty list") {
        const ConfigError error = only_error(parse("[groups.g]\nservers = []\n"));
        CHECK(contains(error.message, "has no servers"));
    }
    SECTION("a server twice") {
        const ConfigError error = only_error(
            parse(std::string(kTwoServers) + "[groups.g]\nservers = [\"memory\", \"memory\"]\n"));
        CHECK(contains(error.message, "lists server 'memory' twice"));
    }
    SECTION("a bad separator") {
        const ConfigError error = only_error(parse(std::string(kTwoServers) +
                                                   "[groups.g]\nservers = [\"memory\"]\nseparator = \".\"\n"));
        CHECK(error.line == 8);
        CHECK(contains(error.message, "'separator' must be 1 to 8"));
    }
    SECTION("an unknown key, with a suggestion") {
        const ConfigError error = only_error(parse(std::string(kTwoServers) +
                                                   "[groups.g]\nservers = [\"memory\"]\nexclude_tool = [\"x\"]\n"));
        CHECK(contains(error.message, "did you mean 'exclude_tools'"));
    }
    SECTION("a member table of a server not in the group") {
        const ConfigError error = only_error(parse(std::string(kTwoServers) +
                                                   "[groups.g]\nservers = [\"memory\"]\n"
                                                   "[groups.g.github]\ntools = [\"x\"]\n"));
        CHECK(error.line == 8);
        CHECK(contains(error.message, "[groups.g.github] names no member of the group"));
    }
    SECTION("a member table with another key") {
        const ConfigError error = only_error(parse(std::string(kTwoServers) +
                                                   "[groups.g]\nservers = [\"memory\"]\n"
                                                   "[groups.g.memory]\ncommand = \"x\"\n"));
        CHECK(contains(error.message, "a member table takes only the filters"));
    }
    SECTION("an empty pattern") {
        const ConfigError error =
            only_error(parse("[servers.a]\ncommand = \"x\"\ntools = [\"\"]\n"));
        CHECK(contains(error.message, "'tools' holds an empty pattern"));
    }
}

TEST_CASE("a server takes the six filter keys", "[registry][groups]") {
    const LoadResult result = parse(R"([servers.a]
command = "x"
tools = ["get_*"]
exclude_tools = ["get_secret"]
prompts = ["p"]
exclude_prompts = ["q"]
resources = ["file:///docs/*"]
exclude_resources = ["file:///docs/private/*"]
)");
    INFO(describe(result));
    REQUIRE(result.registry.has_value());
    const ItemFilters& filters = result.registry->servers.front().filters;
    CHECK(filters.tools.admits("get_issue"));
    CHECK_FALSE(filters.tools.admits("get_secret"));
    CHECK_FALSE(filters.tools.admits("create_issue"));
    CHECK(filters.prompts.admits("p"));
    CHECK_FALSE(filters.prompts.admits("q"));
    CHECK(filters.resources.admits("file:///docs/a/b.md"));
    CHECK_FALSE(filters.resources.admits("file:///docs/private/key"));
    CHECK_FALSE(filters.resources.admits("file:///etc/passwd"));
}

TEST_CASE("an empty filter admits everything", "[registry][groups]") {
    const NameFilter none;
    CHECK(none.admits("anything"));
    CHECK(none.admits(""));
    NameFilter glob{{"a?c", "x[0-9]"}, {}};
    CHECK(glob.admits("abc"));
    CHECK(glob.admits("x7"));
    CHECK_FALSE(glob.admits("abbc"));
}

TEST_CASE("separators", "[registry][groups]") {
    CHECK(is_separator("__"));
    CHECK(is_separator("-"));
    CHECK_FALSE(is_separator(""));
    CHECK_FALSE(is_separator("."));
    CHECK_FALSE(is_separator("123456789"));
}

TEST_CASE("members whose joined names could be one name clash, whatever their tools",
          "[registry][groups]") {
    const auto clash = [](std::vector<std::string> servers, std::string_view separator) {
        return prefix_clash(servers, separator);
    };
    const auto found = clash({"memory", "d", "d__x"}, "__");
    REQUIRE(found);
    CHECK(found->shorter == 1);
    CHECK(found->longer == 2);
    const auto reversed = clash({"d__x", "d"}, "__");
    REQUIRE(reversed);
    CHECK(reversed->shorter == 1);
    CHECK(reversed->longer == 0);
    CHECK(clash({"d", "d_"}, "__"));  // "d___t" is d's "_t" and d_'s "t"
    CHECK(clash({"a", "a-b"}, "-"));
    CHECK_FALSE(clash({"git", "github"}, "__"));  // "git__" begins no "github__..." name
    CHECK_FALSE(clash({"d", "d__x"}, "--"));
    CHECK_FALSE(clash({"d", "dx", "x"}, "__"));
    CHECK_FALSE(clash({"only"}, "__"));
    const std::vector<std::string> servers = {"d", "d__x"};
    CHECK(prefix_clash_example(servers, "__", *clash(servers, "__")) ==
          "servers 'd' and 'd__x' could show two tools by one name: 'd__x__t' would be both "
          "d__x's tool 't' and d's tool 'x__t'");
    CHECK(clash_free_separator(servers, "__") == "--");
    // Each separator tried joins "a" into the name of another member.
    const std::vector<std::string> crowded = {"a",    "a__",  "a--", "a-", "a_",
                                              "a___", "a---", "a-_", "a_-"};
    CHECK(clash_free_separator(crowded, "__") == std::nullopt);
}

TEST_CASE("a group whose members could show one name twice is an error naming both",
          "[registry][groups]") {
    const ConfigError error = only_error(parse(R"([servers.d]
command = "x"

[servers.d__x]
command = "x"

[groups.g]
servers = ["d", "d__x"]
)"));
    CHECK(error.line == 8);
    CHECK(error.column == 17);
    CHECK(contains(error.message,
                   "group 'g': servers 'd' and 'd__x' could show two tools by one name"));
    CHECK(contains(error.message,
                   "rename one of the two servers, or set separator = \"--\" in [groups.g]"));
    const LoadResult apart = parse(R"([servers.d]
command = "x"

[servers.d__x]
command = "x"

[groups.g]
servers = ["d", "d__x"]
separator = "--"
)");
    INFO(describe(apart));
    CHECK(apart.registry.has_value());
}
