// A reload reaches the sessions already attached: changed filters re-filter their lists (with
// list_changed), and a `logs -f` of a server its user may no longer use ends.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "added_user.h"
#include "call_text.h"
#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"
#include "proc_fs.h"

using namespace integration;
using nlohmann::json;

namespace {

// The registry of the filter test: a server with filters (served as a group of one), a group
// with a member's filter, and a server without any (served directly).
std::string filtered_registry(const std::string& solo_tools, const std::string& member_tools,
                              const std::string& plain_settings) {
    std::map<std::string, std::string> plain;
    if (!plain_settings.empty()) plain["exclude_tools"] = plain_settings;
    return server_toml("solo", {}, {{"tools", solo_tools}}) + "\n" + server_toml("alpha") + "\n" +
           server_toml("plain", {}, plain) + "\n[groups.dev]\nservers = [\"alpha\"]\n\n" +
           "[groups.dev.alpha]\ntools = " + member_tools + "\n";
}

// Every tool name of one tools/list (the demo servers list theirs on one page).
std::vector<std::string> listed_tools(McpSession& session) {
    const McpMessage reply = session.wait_response(session.request("tools/list"));
    REQUIRE(reply.json.contains("result"));
    std::vector<std::string> names;
    for (const json& tool : reply.json["result"]["tools"]) names.push_back(tool["name"]);
    return names;
}

bool told_tools_changed(McpSession& session) {
    return session
        .wait_for(
            [](const McpMessage& m) { return m.method() == "notifications/tools/list_changed"; },
            10s)
        .has_value();
}

}  // namespace

TEST_CASE("a reload that changes filters re-filters the attached sessions, with list_changed",
          "[reload][group]") {
    TestEnv env("live-filters");
    env.write_registry(filtered_registry("[\"echo\", \"add\"]", "[\"echo\"]", ""));
    DaemonProcess& daemon = env.start_daemon();
    for (const char* name : {"solo", "alpha", "plain"}) env.wait_state(name, "running");
    const pid_t solo_pid = *env.server_pid("solo");
    const pid_t alpha_pid = *env.server_pid("alpha");

    McpSession solo(env.socket(), "solo");
    solo.initialize("solo-agent");
    CHECK(listed_tools(solo) == std::vector<std::string>{"echo", "add"});
    McpSession group(env.socket(), "dev");
    group.initialize("group-agent");
    CHECK(listed_tools(group) == std::vector<std::string>{"alpha__echo"});
    McpSession plain(env.socket(), "plain");
    plain.initialize("plain-agent");
    CHECK(call_text(plain, "echo", {{"text", "before"}}) == "before");

    // The server's own filter narrows, the group member's widens, and the plain server gets one.
    env.write_registry(filtered_registry("[\"echo\"]", "[\"echo\", \"add\"]", "[\"crash\"]"));
    const RunResult reload = env.ctl({"reload"});
    INFO(reload.describe());
    REQUIRE(reload.exit_code == 0);

    // Each filtered session is told, and its next list is the new one.
    CHECK(told_tools_changed(solo));
    CHECK(listed_tools(solo) == std::vector<std::string>{"echo"});
    const McpMessage hidden = solo.wait_response(solo.call_tool("add", {{"a", 1}, {"b", 2}}));
    CHECK(hidden.json["error"]["message"] == "Unknown tool: add");
    CHECK(call_text(solo, "echo", {{"text", "still"}}) == "still");

    CHECK(told_tools_changed(group));
    CHECK(listed_tools(group) == std::vector<std::string>{"alpha__echo", "alpha__add"});
    CHECK(call_text(group, "alpha__add", {{"a", 2}, {"b", 3}}) == "5");

    // A session served without filters has nothing that could hide a tool: it ends, saying why.
    CHECK(plain.wait_closed(10s));
    CHECK(daemon.log().find("ended: a reload gave 'plain' filters") != std::string::npos);
    McpSession again(env.socket(), "plain");
    again.initialize("plain-agent");
    const std::vector<std::string> now = listed_tools(again);
    CHECK(std::find(now.begin(), now.end(), "crash") == now.end());
    CHECK(std::find(now.begin(), now.end(), "echo") != now.end());

    // Filters are mcpd's alone: no process was restarted for them.
    CHECK(env.server_pid("solo") == solo_pid);
    CHECK(env.server_pid("alpha") == alpha_pid);
}

TEST_CASE("a reload that removes a user from a server's allow_users ends its logs -f of it",
          "[reload][access]") {
    const AddedUser user;
    TestEnv env("revoke-follow");
    const std::string allowed = "[\"" + user.name() + "\"]";
    const auto registry = [&](bool watched_allowed) {
        return kOpenSocket +
               server_toml("watched", {},
                           watched_allowed
                               ? std::map<std::string, std::string>{{"allow_users", allowed}}
                               : std::map<std::string, std::string>{}) +
               server_toml("kept", {}, {{"allow_users", allowed}});
    };
    env.write_registry(registry(true));
    open_directory(env.dir());
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("watched", "running");
    env.wait_state("kept", "running");

    BackgroundProcess revoked(
        user.command({bin("mcpctl"), "--socket", env.socket(), "logs", "-f", "watched"}));
    REQUIRE(revoked.wait_for_output("ready", 10s));
    BackgroundProcess kept(
        user.command({bin("mcpctl"), "--socket", env.socket(), "logs", "-f", "kept"}));
    REQUIRE(kept.wait_for_output("ready", 10s));

    // The user keeps "kept", so it keeps its control connections: only the follow of
    // "watched" ends, with the reason.
    env.write_registry(registry(false));
    const RunResult reload = env.ctl({"reload"});
    INFO(reload.describe());
    REQUIRE(reload.exit_code == 0);
    INFO(revoked.output());
    CHECK(revoked.wait_for_output("a reload removed uid " + std::to_string(user.uid()) +
                                      " from the allow_users/allow_groups of 'watched'",
                                  10s));
    wait_until("the revoked logs -f exits", 10s, [&] { return !process_alive(revoked.pid()); });
    CHECK(daemon.log().find("[watched] ending the logs -f of pid") != std::string::npos);

    // The other follow goes on: a restart of its server shows in it.
    REQUIRE(env.ctl({"restart", "kept", "--wait"}).exit_code == 0);
    CHECK(kept.wait_for_output("ready", 10s, 2));
    CHECK(process_alive(kept.pid()));
}
