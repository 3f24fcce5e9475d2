// A reload's filters reaching a group session that is already attached: its lists follow
// them, the client is told, and cursors into the old lists are refused.
#include <catch2/catch.hpp>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/mux/group_router.h"

using namespace mcpd;
using nlohmann::json;

namespace {

struct RefilterEnv : GroupEnvironment {
    std::vector<json> client;
    std::vector<std::deque<json>> members{2};
    void to_client(std::string_view line) override { client.push_back(json::parse(line)); }
    void to_member(std::size_t member, std::string_view line) override {
        members.at(member).push_back(json::parse(line));
    }
    void note(std::string_view) override {}

    json next_to(std::size_t member) {
        REQUIRE_FALSE(members.at(member).empty());
        json message = members[member].front();
        members[member].pop_front();
        return message;
    }
};

GroupSpec refilter_spec() {
    GroupSpec spec;
    spec.name = "dev";
    spec.members = {{"alpha", {}, {}, {}}, {"beta", {}, {}, {}}};
    spec.members[1].server_filters.tools.exclude = {"secret_*"};
    return spec;
}

std::string reply_to(const json& request, const json& result) {
    return json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}}.dump();
}

// Both members answer initialize with `capabilities`.
void start_session(GroupRouter& router, RefilterEnv& env, const json& capabilities) {
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})");
    for (std::size_t i = 0; i < 2; ++i) {
        const json request = env.next_to(i);
        router.on_member_line(
            i, reply_to(request, {{"protocolVersion", "2025-06-18"},
                                  {"capabilities", capabilities},
                                  {"serverInfo", {{"name", "s"}, {"version", "1"}}}}));
    }
    router.on_client_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    for (auto& queue : env.members) queue.clear();
    env.client.clear();
}

// The client's tools/list page from `member`, which lists `names`.
json tools_page(GroupRouter& router, RefilterEnv& env, int id, std::size_t member,
                const std::vector<std::string>& names, const json& cursor = nullptr) {
    json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/list"}};
    if (!cursor.is_null()) request["params"] = {{"cursor", cursor}};
    router.on_client_line(request.dump());
    const json sent = env.next_to(member);
    json tools = json::array();
    for (const std::string& name : names) tools.push_back({{"name", name}});
    router.on_member_line(member, reply_to(sent, {{"tools", tools}}));
    REQUIRE_FALSE(env.client.empty());
    return env.client.back();
}

std::vector<std::string> names_of(const json& page) {
    std::vector<std::string> names;
    for (const json& tool : page["result"]["tools"]) names.push_back(tool["name"]);
    return names;
}

}  // namespace

TEST_CASE("a reload's filters re-filter an attached group session's lists, with list_changed",
          "[group][reload]") {
    RefilterEnv env;
    GroupRouter router(refilter_spec(), env, 7);
    start_session(router, env, {{"tools", {{"listChanged", true}}}});
    const json first = tools_page(router, env, 1, 0, {"echo", "add"});
    CHECK(names_of(first) == std::vector<std::string>{"alpha__echo", "alpha__add"});
    REQUIRE(first["result"].contains("nextCursor"));
    const json cursor = first["result"]["nextCursor"];
    env.client.clear();

    // The reload: alpha's server now hides "add", beta's no longer hides secrets.
    std::vector<GroupMemberSpec> filters = refilter_spec().members;
    filters[0].server_filters.tools.exclude = {"add"};
    filters[1].server_filters.tools.exclude.clear();
    router.refilter(filters);
    REQUIRE(env.client.size() == 1);  // one notification for the list, however many members
    CHECK(env.client[0] ==
          json{{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
    env.client.clear();

    // A page handed out before is of the old list.
    router.on_client_line(json{
        {"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"cursor", cursor}}}}
                              .dump());
    CHECK(env.client.back()["error"]["code"] == -32602);
    CHECK(env.members[1].empty());

    // Listed again from the start: the new filters.
    const json again = tools_page(router, env, 3, 0, {"echo", "add"});
    CHECK(names_of(again) == std::vector<std::string>{"alpha__echo"});
    const json beta =
        tools_page(router, env, 4, 1, {"echo", "secret_key"}, again["result"]["nextCursor"]);
    CHECK(names_of(beta) == std::vector<std::string>{"beta__echo", "beta__secret_key"});

    // A call to what is hidden now is refused, and nothing reaches the member.
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"alpha__add","arguments":{}}})");
    CHECK(env.members[0].empty());
    CHECK(env.client.back()["error"]["message"] == "Unknown tool: alpha__add");
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"beta__secret_key","arguments":{}}})");
    CHECK(env.next_to(1)["params"]["name"] == "secret_key");
}

TEST_CASE("a reload that leaves a group session's filters as they were tells it nothing",
          "[group][reload]") {
    RefilterEnv env;
    GroupRouter router(refilter_spec(), env, 7);
    start_session(router, env,
                  {{"tools", {{"listChanged", true}}}, {"prompts", {{"listChanged", true}}}});
    const json first = tools_page(router, env, 1, 0, {"echo"});
    env.client.clear();
    router.refilter(refilter_spec().members);
    CHECK(env.client.empty());
    // Its cursors still hold.
    const json next = tools_page(router, env, 2, 1, {"echo"}, first["result"]["nextCursor"]);
    CHECK(names_of(next) == std::vector<std::string>{"beta__echo"});

    SECTION("a list the session does not declare listChanged for changes without a notification") {
        std::vector<GroupMemberSpec> filters = refilter_spec().members;
        filters[0].group_filters.prompts.allow = {"review"};
        RefilterEnv quiet_env;
        GroupRouter quiet(refilter_spec(), quiet_env, 8);
        start_session(quiet, quiet_env, {{"prompts", json::object()}});
        quiet.refilter(filters);
        CHECK(quiet_env.client.empty());
        quiet.on_client_line(R"({"jsonrpc":"2.0","id":1,"method":"prompts/list"})");
        const json sent = quiet_env.next_to(0);
        quiet.on_member_line(
            0, reply_to(sent, {{"prompts", {{{"name", "review"}}, {{"name", "other"}}}}}));
        REQUIRE(quiet_env.client.size() == 1);
        CHECK(quiet_env.client[0]["result"]["prompts"] == json{{{"name", "alpha__review"}}});
    }
    SECTION("a member's filters change for a feature it does not have: nothing to tell") {
        std::vector<GroupMemberSpec> filters = refilter_spec().members;
        filters[1].member_filters.resources.exclude = {"file:///*"};
        env.client.clear();  // the page listed above
        router.refilter(filters);
        CHECK(env.client.empty());
    }
}
