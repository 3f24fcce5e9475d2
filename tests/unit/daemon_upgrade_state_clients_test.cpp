// The state an upgrade in place hands over (docs/UPGRADE.md), its clients' part: each server's
// router with its requests in flight and counts, the sessions with their bytes and routes, the
// private and project processes, the `logs -f` connections; every one read back as written,
// and one bad field refusing the whole state.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/state_file.h"
#include "daemon/upgrade_state.h"
#include "fake_supervisor_environment.h"
#include "upgrade_state_checks.h"

using namespace mcpd;
using namespace mcpd::testing;
using nlohmann::json;

namespace {

Project site_project() {
    Project project;
    project.roots = {"file:///home/ann/site"};
    project.directory = "/home/ann/site";
    project.from_roots = true;
    project.user = 1000;
    project.identity = config::ChildIdentity{1000, 1000, {1000, 27}, "ann", "/home/ann"};
    return project;
}

std::string request_line_kept() {
    return "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"resources/subscribe\"}";
}

// A state of version 2: two servers, each router with its state, a session on the socket and a
// passed one, with bytes read and not handled, and bytes not yet written.
UpgradeState state_with_sessions() {
    UpgradeState state = base_state();
    state.uptime_ms = 10;
    CarriedRouter router;
    router.next_child_request = 9;
    router.child_level = 3;
    router.unset_view = 6;
    router.served_version = "2025-11-25";
    router.task_owners = {{"task-1", 3}};
    router.task_tokens = {{"task-1", "\"mcpd-p4\""}};
    router.tombstones = {17, 12};
    router.next_progress_token = 5;
    router.progress["\"mcpd-p4\""] = routing::ProgressRoute{3, "\"tok\"", 17};
    router.roots_differ_noted = true;
    router.answered_from_cache = 15;
    CarriedRequest request;
    request.child_id = 17;
    request.pending.session = 3;
    request.pending.kind = routing::PendingKind::subscribe;
    request.pending.original_id = "\"s-1\"";
    request.pending.own_token = "\"mcpd-p4\"";
    request.pending.uri = "demo://a";
    request.pending.level = 2;
    request.pending.waiters = {{7, "12"}};
    request.pending.deadline = TimePoint(std::chrono::seconds(1060));
    request.pending.sent = TimePoint(std::chrono::seconds(1000));
    request.pending.bytes_in = 90;
    request.pending.catalog_list = ListKind::prompts;
    request.pending.crashes = 1;
    request.counted = std::make_pair(true, "echo");
    request.kept = "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"resources/subscribe\"}";
    request.log_names = std::make_pair("resources/subscribe", "");
    router.requests.push_back(request);
    router.child_requests.emplace_back("\"mcpd-c2\"", routing::ChildRequest{3, "5", "roots/list", "", TimePoint(std::chrono::seconds(1600))});
    router.queue.push_back(routing::Queued{7, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":4}", TimePoint(std::chrono::seconds(1010)), 0});
    router.serial_queue.push_back(routing::Waiting{3, "8", "{\"id\":8}", 1});
    router.level_request = 16;
    CarriedStats stats;
    stats.tools["echo"].requests = 4;
    stats.tools["echo"].in_flight = 1;
    stats.methods["resources/subscribe"].replies = 2;
    stats.sessions_total = 5;
    stats.listed_tools = {"echo", "slow"};
    stats.hints["echo"] = ToolHints{true, std::nullopt, false};
    stats.replay_counts.assign(std::size(kReplayVerdicts), 0);
    stats.replay_counts[1] = 3;
    router.stats = stats;
    state.servers.push_back({"a", SupervisorFixture().sup.snapshot(), std::nullopt, router, std::nullopt, std::nullopt});
    state.servers.push_back({"b", SupervisorFixture().sup.snapshot(), std::nullopt, CarriedRouter{}, std::nullopt, std::nullopt});
    // A session's private process of "a", and a project's child of "b" run as its user.
    state.servers.push_back({"a", SupervisorFixture().sup.snapshot(), std::nullopt, CarriedRouter{},
                             CarriedInstance{InstanceKind::exclusive, "3", std::nullopt}, std::nullopt});
    const Project project = site_project();
    state.servers.push_back({"b", SupervisorFixture().sup.snapshot(), std::nullopt, CarriedRouter{},
                             CarriedInstance{InstanceKind::project, project.key(), project}, std::nullopt});
    // The legacy process of "b"'s project child, and of "a"'s shared process.
    state.servers.push_back({"b", SupervisorFixture().sup.snapshot(), std::nullopt, CarriedRouter{},
                             CarriedInstance{InstanceKind::legacy, "project\n" + project.key(), project}, std::nullopt});
    state.servers.push_back({"a", SupervisorFixture().sup.snapshot(), std::nullopt, CarriedRouter{},
                             CarriedInstance{InstanceKind::legacy, "", std::nullopt}, std::nullopt});
    state.next_session = 8;
    CarriedSession socket;
    socket.id = 3;
    socket.server = "a";
    socket.fd = 10;
    socket.unread = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":";
    socket.unwritten = std::string("{\"result\":\"\xff\"}\n", 15);
    socket.router.id = 3;
    socket.router.attached_at = TimePoint(std::chrono::seconds(1000));
    socket.router.initialized = socket.router.ready = true;
    socket.router.protocol = "2025-11-25";
    socket.router.capabilities = {{"sampling", json::object()}};
    socket.router.client_name = "agent";
    socket.router.client_version = "1.2";
    socket.router.log_level = 4;
    socket.router.subscriptions = {"demo://a", "demo://b"};
    socket.router.tasks = {"task-1"};
    socket.router.ended_tasks = {"task-0"};
    socket.router.ended_order = {"task-0"};
    socket.router.url_elicitations = {"e-1"};
    socket.router.counters.requests = 12;
    socket.router.counters.replies = 11;
    socket.router.counters.bytes_in = 640;
    socket.router.counters.latency.add(300);
    socket.router.counters.latency.add(70000);
    socket.router.in_flight.set("\"s-1\"", 17, 12);
    socket.router.waiting.set("8", 17);
    socket.router.serial_bytes = 9;
    socket.instance = CarriedInstance{InstanceKind::exclusive, "3", std::nullopt};
    state.sessions.push_back(socket);
    CarriedSession passed;
    passed.id = 7;
    passed.server = "b";
    passed.passed_fds = true;
    passed.fd = 11;
    passed.output_fd = 12;
    passed.link_fd = 13;
    passed.router.id = 7;
    passed.instance = CarriedInstance{InstanceKind::project, project.key(), std::nullopt};
    passed.working_project = project;
    state.sessions.push_back(passed);
    CarriedSession legacy;
    legacy.id = 5;
    legacy.server = "a";
    legacy.fd = 15;
    legacy.router.id = 5;
    legacy.instance = CarriedInstance{InstanceKind::legacy, "", std::nullopt};
    legacy.modern.emplace(InstanceKind::shared, "");
    state.sessions.push_back(legacy);
    // A group session over "a" (on its shared process) and "b" (left out).
    CarriedSession group;
    group.id = 6;
    group.server = "a+b";
    group.fd = 16;
    group.router.id = 6;
    CarriedGroup carried;
    carried.kind = "adhoc";
    carried.name = "a+b";
    carried.router = {{"nonce", "7"}, {"initialized", true}};
    CarriedGroupMember on_a;
    on_a.id = 9;
    on_a.server = "a";
    on_a.router = routing::SessionState{};
    on_a.router->id = 9;
    on_a.router->client_name = "agent";
    CarriedGroupMember left_out;
    left_out.id = 10;
    left_out.server = "b";
    carried.members = {on_a, left_out};
    group.group = carried;
    state.sessions.push_back(group);
    state.next_session = 12;
    state.followers = {{14, "b"}};
    CarriedStats gone;
    gone.tools["echo"].requests = 7;
    gone.sessions_total = 3;
    gone.replay_counts.assign(std::size(kReplayVerdicts), 0);
    state.pool = {{"a", 86400000, gone}, {"b", 5, std::nullopt}};
    return state;
}

}  // namespace

TEST_CASE("upgrade state: routers and sessions round-trip byte for byte, and a bad one refuses the state") {
    const UpgradeState state = state_with_sessions();
    const json body = to_json(state);
    const Result<UpgradeState> parsed = read_back(body);
    const CarriedSession& socket = parsed->sessions[0];
    CHECK(socket.unread == state.sessions[0].unread);
    CHECK(socket.unwritten == state.sessions[0].unwritten);
    CHECK(socket.router.attached_at == state.sessions[0].router.attached_at);
    CHECK(socket.router.log_level == 4);
    CHECK(socket.router.subscriptions == state.sessions[0].router.subscriptions);
    CHECK(socket.router.counters.latency.count() == 2);
    CHECK(socket.router.counters.latency.sum_us() == 70300);
    CHECK(socket.router.counters.requests == 12);
    REQUIRE(parsed->servers[0].router.has_value());
    CHECK(parsed->servers[0].router->tombstones == std::vector<std::uint64_t>{17, 12});
    CHECK(parsed->servers[0].router->progress.at("\"mcpd-p4\"").child_id == 17);
    CHECK(parsed->next_session == 12);
    REQUIRE(parsed->sessions.size() == 4);
    REQUIRE(parsed->sessions[3].group.has_value());
    CHECK(parsed->sessions[3].group->members[0].router->client_name == "agent");
    CHECK_FALSE(parsed->sessions[3].group->members[1].router.has_value());
    CHECK(parsed->followers == state.followers);
    // Every descriptor the state names is kept across the exec, and nothing else.
    std::vector<int> kept = kept_descriptors(parsed.value());
    std::sort(kept.begin(), kept.end());
    CHECK(kept == std::vector<int>{5, 10, 11, 12, 13, 14, 15, 16});
    REQUIRE(parsed->servers[3].instance.has_value());
    CHECK(parsed->servers[3].instance->project == site_project());
    CHECK(parsed->sessions[1].working_project == site_project());
    CHECK(parsed->sessions[0].instance->qualifier == "3");
    CHECK(parsed->sessions[2].modern == std::make_pair(InstanceKind::shared, std::string()));
    CHECK(parsed->servers[4].instance->project == site_project());
    const CarriedRouter& a = *parsed->servers[0].router;
    REQUIRE(a.requests.size() == 1);
    CHECK(a.requests[0].pending.waiters.size() == 1);
    CHECK(a.requests[0].pending.deadline == TimePoint(std::chrono::seconds(1060)));
    CHECK(a.requests[0].pending.catalog_list == ListKind::prompts);
    CHECK(a.requests[0].counted == std::make_pair(true, std::string("echo")));
    CHECK(a.requests[0].kept == request_line_kept());
    CHECK(a.stats->tools.at("echo").in_flight == 1);
    CHECK(a.stats->hints.at("echo") == ToolHints{true, std::nullopt, false});
    CHECK(socket.router.in_flight.bytes() == state.sessions[0].router.in_flight.bytes());

    const auto refused = [&](const std::function<void(json&)>& change) { return refusal_of(body, change); };
    CHECK_THAT(refused([](json& b) { b["sessions"][1]["link_fd"] = 10; }),
               Catch::Contains("named twice"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["fd"] = 5; }), Catch::Contains("named twice"));
    CHECK_THAT(refused([](json& b) { b["sessions"][1]["server"] = "gone"; }),
               Catch::Contains("a server or instance the state does not have"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["instance"]["qualifier"] = "4"; }),
               Catch::Contains("a server or instance the state does not have"));
    CHECK_THAT(refused([](json& b) { b["servers"][3]["instance"]["qualifier"] = "x"; }),
               Catch::Contains("not the one it is kept under"));
    CHECK_THAT(refused([](json& b) { b["servers"][3]["instance"]["project"]["roots"] = {"file:///home/ann/site/"}; }),
               Catch::Contains("not a normalised URI"));
    CHECK_THAT(refused([](json& b) { b["servers"][2]["instance"]["kind"] = "other"; }),
               Catch::Contains("not exclusive, project or legacy"));
    CHECK_THAT(refused([](json& b) { b["servers"][2]["instance"]["kind"] = "legacy"; }),
               Catch::Contains("a legacy process of no instance mcpd has"));
    CHECK_THAT(refused([](json& b) { b["servers"][4]["instance"]["qualifier"] = "project\nother"; }),
               Catch::Contains("not the one it is kept under"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["modern"] = {{"kind", "shared"}, {"qualifier", ""}}; }),
               Catch::Contains("no legacy client"));
    CHECK_THAT(refused([](json& b) { b["sessions"][2]["modern"]["kind"] = "legacy"; }),
               Catch::Contains("not one mcpd has"));
    CHECK_THAT(refused([](json& b) { b["servers"][2]["instance"] = b["servers"][3]["instance"]; b["servers"][2]["name"] = "b"; }),
               Catch::Contains("named twice"));
    CHECK_THAT(refused([](json& b) {
                   b["sessions"][1]["id"] = 12;
                   b["sessions"][1]["router"]["id"] = 12;
               }),
               Catch::Contains("not given yet"));
    CHECK_THAT(refused([](json& b) { b["sessions"][1]["id"] = 3; }),
               Catch::Contains("another session's"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["unread"] = "not base64!"; }),
               Catch::Contains("base64url"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["output_fd"] = 20; }),
               Catch::Contains("descriptors of a passed one"));
    CHECK_THAT(refused([](json& b) { b["sessions"][1]["output_fd"] = 11; }),
               Catch::Contains("three descriptors"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["router"]["log_level"] = 9; }),
               Catch::Contains("\"log_level\" is out of range"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["router"]["counters"]["latency_buckets"] = {1, 2}; }),
               Catch::Contains("latency buckets"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["router"]["subscriptions"] = {1}; }),
               Catch::Contains("\"subscriptions\""));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["router"]["task_owners"]["task-1"] = "3"; }),
               Catch::Contains("owner"));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["router"]["tombstones"] = {-1}; }),
               Catch::Contains("tombstone"));
    CHECK_THAT(refused([](json& b) { b["next_session"] = 0; }), Catch::Contains("next_session"));
    CHECK_THAT(refused([](json& b) { b["sessions"][3]["group"]["members"][1]["id"] = 9; }),
               Catch::Contains("given twice"));
    CHECK_THAT(refused([](json& b) { b["sessions"][3]["group"]["kind"] = "other"; }),
               Catch::Contains("not a group's"));
    CHECK_THAT(refused([](json& b) { b["sessions"][3]["group"]["members"][0]["server"] = "c"; }),
               Catch::Contains("member c is on a process the state does not have"));
    CHECK_THAT(refused([](json& b) { b["sessions"][3]["instance"] = b["sessions"][0]["instance"]; }),
               Catch::Contains("a group session has a route of its own"));
    CHECK_THAT(refused([](json& b) { b["followers"][0]["fd"] = 13; }),
               Catch::Contains("a follower's descriptor is not one of its own"));
    CHECK_THAT(refused([](json& b) { b["followers"][0]["server"] = "gone"; }),
               Catch::Contains("a server the state does not have"));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["router"]["requests"][0]["kind"] = "other"; }),
               Catch::Contains("its kind is not one mcpd has"));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["router"]["requests"][0]["level"] = 8; }),
               Catch::Contains("\"level\""));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["router"]["requests"][0]["catalog_list"] = 4; }),
               Catch::Contains("\"catalog_list\""));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["router"]["stats"]["replay_counts"] = {1}; }),
               Catch::Contains("one per verdict"));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["router"]["queue"][0]["line"] = 5; }),
               Catch::Contains("a queued line"));
    CHECK_THAT(refused([](json& b) { b["sessions"][0]["router"]["in_flight"]["\"s-1\""] = {17}; }),
               Catch::Contains("not a child id with its bytes"));

    // The previous version's state has no routers and no sessions, and is read as it is.
    json version_1 = body;
    version_1.erase("sessions");
    version_1.erase("next_session");
    for (json& server : version_1["servers"]) server.erase("router");
    const Result<UpgradeState> old = parse_upgrade_state(version_1);
    REQUIRE(old.ok());
    CHECK(old->sessions.empty());
    CHECK_FALSE(old->servers[0].router.has_value());
    const Result<state_file::Decoded> decoded =
        state_file::decode(state_file::encode(version_1, 1));
    REQUIRE(decoded.ok());
    CHECK(decoded->version == 1);
}

