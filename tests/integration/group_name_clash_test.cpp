// Group names are unique by construction (docs/GROUPS.md, Names): members whose names joined
// with the separator could show two tools by one name are refused, in the registry and by
// `mcpctl connect a b`; the same servers apart under another separator show each tool once.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "call_text.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

// d offers x__t0 and d__x offers t0: with "__" both would be shown as d__x__t0.
std::string clashing_servers() {
    return server_toml("d", {"--extra-tool=x__t0", "--tick-ms=0"}) + "\n" +
           server_toml("d__x", {"--extra-tool=t0", "--tick-ms=0"}) + "\n";
}

// Every tool name a session's tools/list shows, all pages.
std::vector<std::string> clash_tool_names(McpSession& session) {
    std::vector<std::string> names;
    json params = json::object();
    for (int page = 0; page < 50; ++page) {
        const McpMessage reply = session.wait_response(session.request("tools/list", params));
        REQUIRE(reply.json.contains("result"));
        for (const json& tool : reply.json["result"]["tools"]) names.push_back(tool["name"]);
        if (!reply.json["result"].contains("nextCursor")) return names;
        params = {{"cursor", reply.json["result"]["nextCursor"]}};
    }
    FAIL("tools/list did not end");
    return names;
}

// The 1-based line of `text` that holds `needle` first.
int line_of(const std::string& text, const std::string& needle) {
    const auto at = text.find(needle);
    REQUIRE(at != std::string::npos);
    return 1 +
           static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
}

std::size_t occurrences(const std::vector<std::string>& names, const std::string& name) {
    return static_cast<std::size_t>(std::count(names.begin(), names.end(), name));
}

}  // namespace

TEST_CASE("members whose joined names could collide are refused, naming both", "[group]") {
    TestEnv env("group-name-clash");
    const std::string registry =
        clashing_servers() + "[groups.both]\nservers = [\"d\", \"d__x\"]\n";
    env.write_registry(registry);

    // In the registry: an error at the second member, with both names and a way out.
    const RunResult checked = run_process({bin("mcpd"), "--check-config", env.registry()});
    INFO(checked.describe());
    CHECK(checked.exit_code == 1);
    const std::string at =
        env.registry() + ":" + std::to_string(line_of(registry, "servers = [")) + ":";
    CHECK(checked.err.find(at) != std::string::npos);
    CHECK(checked.err.find("servers 'd' and 'd__x' could show two tools by one name") !=
          std::string::npos);
    CHECK(checked.err.find("'d__x__t' would be both d__x's tool 't' and d's tool 'x__t'") !=
          std::string::npos);
    CHECK(checked.err.find("separator = \"--\"") != std::string::npos);

    // On the spot: `mcpctl connect d d__x` is refused the same way, and nothing is attached.
    env.write_registry(clashing_servers());
    env.start_daemon();
    const RunResult adhoc = env.ctl({"connect", "d", "d__x"});
    INFO(adhoc.describe());
    CHECK(adhoc.exit_code == 1);
    CHECK(adhoc.err.find("servers 'd' and 'd__x' could show two tools by one name") !=
          std::string::npos);
    CHECK(env.server("d")["sessions"] == 0);
    CHECK(env.server("d__x")["sessions"] == 0);

    // A reload to the clashing group is refused as a whole; the running registry stays.
    env.write_registry(registry);
    const RunResult reload = env.ctl({"reload"});
    CHECK(reload.exit_code != 0);
    CHECK(reload.err.find("'d' and 'd__x'") != std::string::npos);
}

TEST_CASE("under a separator that keeps them apart, each member's tool has a name of its own",
          "[group]") {
    TestEnv env("group-name-apart");
    env.write_registry(clashing_servers() +
                       "[groups.both]\nservers = [\"d\", \"d__x\"]\nseparator = \"--\"\n");
    env.start_daemon();
    McpSession session(env.socket(), "both");
    session.initialize("agent");
    const std::vector<std::string> names = clash_tool_names(session);
    INFO(json(names).dump());
    CHECK(occurrences(names, "d--x__t0") == 1);
    CHECK(occurrences(names, "d__x--t0") == 1);
    CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
    // Each goes to its own member, which answers with the name it knows the tool by.
    CHECK(call_text(session, "d--x__t0") == "x__t0");
    CHECK(call_text(session, "d__x--t0") == "t0");
}
