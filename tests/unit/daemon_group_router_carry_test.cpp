// GroupRouter: a group session's state carried across an upgrade in place
// (group_router_carry.cpp). A new router of the same group, given what the first carried, goes
// on where it stopped: the handshake it answered, its members, names and ids; what passes
// through it keeps it from being carried until it has passed.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <deque>
#include <string>
#include <vector>

#include "daemon/mux/group_router.h"
#include "recording_group_env.h"

using namespace mcpd;
using nlohmann::json;

namespace {

using CarryEnv = testing::RecordingGroupEnv;

GroupSpec carried_spec() {
    GroupSpec spec;
    spec.name = "dev";
    spec.members = {{"alpha", {}, {}, {}}, {"beta", {}, {}, {}}};
    return spec;
}

std::string result_for(const json& request, const json& result) {
    return json{{"jsonrpc", "2.0"}, {"id", request["id"]}, {"result", result}}.dump();
}

void initialized_group(GroupRouter& router, CarryEnv& env) {
    router.on_client_line(
        R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"agent","version":"1"}}})");
    for (std::size_t i = 0; i < 2; ++i) {
        const json request = env.take(i);
        router.on_member_line(
            i, result_for(request, {{"protocolVersion", "2025-06-18"},
                                    {"capabilities", {{"tools", json::object()}, {"logging", json::object()}}},
                                    {"serverInfo", {{"name", "s" + std::to_string(i)}, {"version", "1"}}}}));
    }
    router.on_client_line(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    for (std::size_t i = 0; i < 2; ++i) env.members[i].clear();
    env.client.clear();
}

}  // namespace

TEST_CASE("group carry: a new router of the group goes on with what the first carried", "[group][upgrade]") {
    CarryEnv before_env;
    GroupRouter before(carried_spec(), before_env, 7);
    initialized_group(before, before_env);
    bool lasting = true;
    CHECK(before.why_not_carried(lasting).empty());

    CarryEnv after_env;
    GroupRouter after(carried_spec(), after_env, 99);
    REQUIRE(after.restore_carried(before.carried()).ok());
    CHECK(after.carried() == before.carried());  // the nonce of its cursors included
    CHECK(after.client_name() == "agent");
    CHECK(after.protocol() == before.protocol());
    CHECK(after_env.client.empty());

    // A call goes to its member under the member's own name, and its answer back with the
    // client's id.
    after.on_client_line(
        R"({"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"beta__echo","arguments":{}}})");
    const json sent = after_env.take(1);
    CHECK(sent["params"]["name"] == "echo");
    after.on_member_line(1, result_for(sent, {{"content", json::array()}}));
    REQUIRE(after_env.client.size() == 1);
    CHECK(json::parse(after_env.client[0])["id"] == 41);
    CHECK(after.why_not_carried(lasting).empty());
}

TEST_CASE("group carry: a call and a fan-out in flight go on in the new router, answered once", "[group][upgrade]") {
    CarryEnv before_env;
    GroupRouter before(carried_spec(), before_env, 7);
    initialized_group(before, before_env);
    before.on_client_line(
        R"({"jsonrpc":"2.0","id":"call","method":"tools/call","params":{"name":"alpha__echo","arguments":{}}})");
    const json call = before_env.take(0);
    before.on_client_line(R"({"jsonrpc":"2.0","id":"level","method":"logging/setLevel","params":{"level":"debug"}})");
    const json level_alpha = before_env.take(0);
    const json level_beta = before_env.take(1);
    bool lasting = true;
    CHECK(before.why_not_carried(lasting).empty());  // carried, not waited for
    CHECK_FALSE(lasting);

    CarryEnv after_env;
    GroupRouter after(carried_spec(), after_env, 99);
    REQUIRE(after.restore_carried(before.carried()).ok());
    CHECK(after.carried() == before.carried());
    // The answers the members give after the exec reach the client with its own ids.
    after.on_member_line(0, result_for(call, {{"content", json::array()}}));
    REQUIRE(after_env.client.size() == 1);
    CHECK(json::parse(after_env.client[0])["id"] == "call");
    after.on_member_line(0, result_for(level_alpha, json::object()));
    CHECK(after_env.client.size() == 1);  // the fan-out waits for its other member
    after.on_member_line(1, result_for(level_beta, json::object()));
    REQUIRE(after_env.client.size() == 2);
    CHECK(json::parse(after_env.client[1])["id"] == "level");
    // A late repeat of an answer is not given twice.
    after.on_member_line(0, result_for(call, {{"content", json::array()}}));
    CHECK(after_env.client.size() == 2);
    const json idle = after.carried()["requests"];
    CHECK(idle["sent"].empty());
    CHECK(idle["waiting"].empty());
    CHECK(idle["fanouts"].empty());

    // A state whose requests do not hold together is refused whole.
    json bad = before.carried();
    bad["requests"]["waiting"][0]["id"] = 777;
    GroupRouter refusing(carried_spec(), after_env, 3);
    CHECK_THAT(refusing.restore_carried(bad).error(), Catch::Contains("names no request it sent"));
    bad = before.carried();
    bad["requests"]["sent"][0]["kind"] = "teleport";
    CHECK_THAT(refusing.restore_carried(bad).error(), Catch::Contains("not ones mcpd writes"));
    bad = before.carried();
    bad["requests"]["sent"][0]["member"] = 2;
    CHECK_THAT(refusing.restore_carried(bad).error(), Catch::Contains("out of range"));
    bad = before.carried();
    bad["requests"]["fanouts"] = json::array();
    CHECK_THAT(refusing.restore_carried(bad).error(), Catch::Contains("fan-out it does not have"));
    CHECK(refusing.carried() == GroupRouter(carried_spec(), after_env, 3).carried());
}

TEST_CASE("group carry: a state of another group, or a bad one, changes nothing", "[group][upgrade]") {
    CarryEnv env;
    GroupRouter before(carried_spec(), env, 7);
    initialized_group(before, env);
    const json state = before.carried();

    GroupSpec three = carried_spec();
    three.members.push_back({"gamma", {}, {}, {}});
    CarryEnv other_env;
    GroupRouter other(three, other_env, 1);
    const json fresh = other.carried();
    const Result<Done> refused = other.restore_carried(state);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error(), Catch::Contains("another number of members"));
    CHECK(other.carried() == fresh);

    GroupRouter same(carried_spec(), other_env, 1);
    json bad = state;
    bad["era"] = "future";
    CHECK_THAT(same.restore_carried(bad).error(), Catch::Contains("era"));
    bad = state;
    bad["members"][0]["state"] = "gone";
    CHECK_THAT(same.restore_carried(bad).error(), Catch::Contains("its state is not one mcpd has"));
    bad = state;
    bad["uri_owners"] = {{"demo://x", 5}};
    CHECK_THAT(same.restore_carried(bad).error(), Catch::Contains("not a member"));
    bad = state;
    bad["cursor_order"] = {"nope"};
    CHECK_THAT(same.restore_carried(bad).error(), Catch::Contains("cursor order"));
}
