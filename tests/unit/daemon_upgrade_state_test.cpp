// The state an upgrade in place hands over (docs/UPGRADE.md): its file format, refused when
// truncated, altered or of another version, and each server's supervisor state, which must come
// back exactly as it was.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>

#include "common/state_file.h"
#include "daemon/sandbox/kernel_support.h"
#include "daemon/server/server_cgroup.h"
#include "daemon/upgrade_state.h"
#include "fake_supervisor_environment.h"
#include "upgrade_state_checks.h"

using namespace mcpd;
using namespace mcpd::testing;
using nlohmann::json;

TEST_CASE("upgrade state: a state decodes to its body, byte for byte, through a sealed memfd") {
    const json body = {{"servers", json::array({{{"name", "a"}, {"restarts", 3}}})},
                       {"text", "é\n\"quoted\""}};
    const std::string text = state_file::encode(body);
    CHECK(text.starts_with("mcpd-state 3 "));
    const Result<UniqueFd> fd = state_file::to_sealed_memfd(text);
    REQUIRE(fd.ok());
    // Sealed: nobody can change it any more.
    CHECK(::write(fd->get(), "x", 1) < 0);
    CHECK(::ftruncate(fd->get(), 0) != 0);
    const Result<std::string> read = state_file::read_all(fd->get());
    REQUIRE(read.ok());
    CHECK(read.value() == text);
    const Result<state_file::Decoded> decoded = state_file::decode(read.value());
    REQUIRE(decoded.ok());
    CHECK(decoded->version == state_file::kVersion);
    CHECK(decoded->body == body);
    CHECK(state_file::encode(decoded->body) == text);
    CHECK(state_file::acknowledgement(decoded.value()) ==
          "mcpd-state ok 3 " + decoded->digest);
}

TEST_CASE("upgrade state: truncated, altered, foreign or newer states are refused, saying why") {
    const std::string text = state_file::encode({{"servers", json::array()}, {"pid", 42}});
    const auto refused = [](std::string_view bad) {
        const Result<state_file::Decoded> decoded = state_file::decode(bad);
        REQUIRE_FALSE(decoded.ok());
        return decoded.error();
    };
    CHECK_THAT(refused(text.substr(0, text.size() - 1)),
               Catch::Contains("truncated"));
    std::string altered = text;
    altered[altered.size() - 3] = altered[altered.size() - 3] == '4' ? '5' : '4';
    CHECK_THAT(refused(altered), Catch::Contains("corrupt"));
    CHECK_THAT(refused(text + "x"), Catch::Contains("after its end"));
    CHECK_THAT(refused(""), Catch::Contains("not an mcpd state"));
    CHECK_THAT(refused("{\"servers\": []}\n"), Catch::Contains("not an mcpd state"));
    CHECK_THAT(refused(state_file::encode({{"pid", 1}}, state_file::kVersion + 1)),
               Catch::Contains("of version 4; this mcpd reads versions 1 to 3"));
    CHECK_THAT(refused(state_file::encode({{"pid", 1}}, 0)), Catch::Contains("of version 0"));
    CHECK_THAT(refused("mcpd-state 1 2 " + std::string(64, '0') + "\n[]"),
               Catch::Contains("corrupt"));
    std::string not_object = state_file::encode(json::object());
    not_object = "mcpd-state 1 2 " + not_object.substr(not_object.find('\n') - 64, 64) + "\n[]";
    CHECK_FALSE(state_file::decode(not_object).ok());
}

TEST_CASE("upgrade state: a failed server's supervisor comes back exactly as it was") {
    config::ServerConfig config = demo_config();
    config.restart = config::RestartPolicy::never;
    SupervisorFixture before(config);
    before.crash(3);
    REQUIRE(before.sup.state() == ServerState::failed);
    before.env.advance(5s);
    const json snapshot = before.sup.snapshot();

    SupervisorFixture after(config);
    after.env.advance(std::chrono::duration_cast<Duration>(before.env.now() - after.env.now()));
    REQUIRE(after.sup.restore(snapshot).ok());
    CHECK(after.sup.state() == ServerState::failed);
    CHECK(after.sup.error() == before.sup.error());
    CHECK(after.sup.last_exit().status == 3);
    CHECK(after.sup.snapshot() == snapshot);
    CHECK(after.sup.snapshot().dump() == snapshot.dump());
    // Observers hear of the state it is in, once.
    REQUIRE(after.env.transitions.size() == 1);
    CHECK(after.env.transitions[0].second == ServerState::failed);
}

TEST_CASE("upgrade state: a server in backoff keeps its remaining wait and its counters") {
    SupervisorFixture before;
    before.crash(1);
    REQUIRE(before.sup.state() == ServerState::backoff);
    before.env.advance(300ms);  // of its 1 s backoff
    const json snapshot = before.sup.snapshot();
    CHECK(snapshot["next_start_in_ms"] == 700);

    SupervisorFixture after;
    REQUIRE(after.sup.restore(snapshot).ok());
    CHECK(after.sup.state() == ServerState::backoff);
    CHECK(after.sup.consecutive_failures() == 1);
    CHECK(after.sup.restarts() == before.sup.restarts());
    CHECK(after.sup.restart_reasons() == before.sup.restart_reasons());
    REQUIRE(after.env.armed(TimerKind::backoff));
    CHECK(after.env.last_armed(TimerKind::backoff) == 700ms);
    CHECK(after.sup.snapshot().dump() == snapshot.dump());
    after.fire(TimerKind::backoff);
    CHECK(after.sup.state() == ServerState::starting);
}

TEST_CASE("upgrade state: a supervisor state that is bad or had a process changes nothing") {
    SupervisorFixture starting;
    starting.sup.request_start();
    CHECK_FALSE(starting.sup.without_process());
    CHECK_FALSE(starting.sup.carriable());
    const json with_process = starting.sup.snapshot();

    SupervisorFixture stopped;
    CHECK(stopped.sup.without_process());
    json good = stopped.sup.snapshot();
    json bad;
    const auto refused = [](const json& state) {
        SupervisorFixture f;
        const Result<Done> restored = f.sup.restore(state);
        CHECK(f.sup.state() == ServerState::stopped);
        CHECK(f.env.transitions.empty());
        return restored.ok() ? std::string() : restored.error();
    };
    CHECK_THAT(refused(with_process), Catch::Contains("had a process starting"));
    bad = good;
    bad["state"] = "running";
    CHECK_THAT(refused(bad), Catch::Contains("running without a process"));
    bad = good;
    bad["pid"] = 4321;
    CHECK_THAT(refused(bad), Catch::Contains("a process without running"));
    bad = good;
    bad["state"] = "sleeping";
    CHECK_THAT(refused(bad), Catch::Contains("\"state\" is not one mcpd knows"));
    bad = good;
    bad.erase("restarts");
    CHECK_THAT(refused(bad), Catch::Contains("\"restarts\" is missing"));
    bad = good;
    bad["restarts"] = -1;
    CHECK_THAT(refused(bad), Catch::Contains("negative"));
    bad = good;
    bad["last_exit"] = "yesterday";
    CHECK_THAT(refused(bad), Catch::Contains("last_exit"));
    CHECK_THAT(refused(json::array()), Catch::Contains("not an object"));
    CHECK(refused(good).empty());
}

TEST_CASE("upgrade state: the body round-trips, and one bad server state refuses all of it") {
    SupervisorFixture backoff;
    backoff.crash(1);
    UpgradeState state = base_state();
    state.pid = 77;
    state.keeper_pid = 78;
    state.keeper_fd = 6;
    state.http_listeners = {{"unix:/run/mcpd/mcpd-http.sock", 7}, {"127.0.0.1:8080", 8}};
    state.metrics_listener.emplace("127.0.0.1:9464", 9);
    state.uptime_ms = 1234;
    state.upgrades = 2;
    state.servers.push_back({"a", backoff.sup.snapshot(), std::nullopt, std::nullopt, std::nullopt, std::nullopt});
    state.servers.push_back({"b", SupervisorFixture().sup.snapshot(), std::nullopt, std::nullopt, std::nullopt, std::nullopt});
    SupervisorFixture running;
    running.run();
    CarriedProcess process;
    process.pid = running.sup.pid();
    process.tag = "1234-7";
    process.stdin_fd = 10;
    process.stdout_fd = 11;
    process.stderr_fd = 12;
    process.begun_stdout = std::string("{\"jsonrpc\":\"2.0\",\"method\":\"no\xff", 30);
    process.begun_stderr = "half a log li";
    process.next_id = 42;
    process.initialize_result = {{"protocolVersion", "2025-11-25"}};
    process.protocol_version = "2025-11-25";
    process.abandoned = {3, 5};
    process.idle_armed = true;
    process.logs = {"started", "listening"};
    state.servers.push_back({"c", running.sup.snapshot(), process, std::nullopt, std::nullopt, std::nullopt});
    const json body = to_json(state);
    const Result<UpgradeState> parsed = read_back(body);

    json bad = body;
    bad["servers"][1]["supervisor"]["state"] = "running";
    const Result<UpgradeState> refused = parse_upgrade_state(bad);
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.error(), Catch::Contains("server 'b'"));
    REQUIRE(parsed->servers[2].process.has_value());
    CHECK(parsed->servers[2].process->begun_stdout == process.begun_stdout);
    CHECK(parsed->servers[2].process->abandoned == process.abandoned);
    CHECK(carried_groups(parsed.value()) == std::vector<pid_t>{process.pid});
    bad = body;
    bad["servers"][2]["process"] = nullptr;
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("running without its process"));
    bad = body;
    bad["servers"][2]["process"]["pid"] = process.pid + 1;
    CHECK_THAT(parse_upgrade_state(bad).error(),
               Catch::Contains("not the one its supervisor ran"));
    bad = body;
    bad["servers"][2]["process"]["stdout_fd"] = 10;
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("three descriptors"));
    bad = body;
    bad["servers"][2]["process"]["begun_stderr"] = "not base64!";
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("base64url"));
    bad = body;
    bad["servers"][2]["process"]["stdin_fd"] = 4294967306LL;  // 10 once cut to 32 bits
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("\"stdin_fd\""));
    bad = body;
    bad["servers"][0].erase("process");
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("has no \"process\""));
    bad = body;
    bad.erase("config");
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("\"config\""));
    bad = body;
    bad["control_fd"] = 1;
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("\"control_fd\""));
    bad = body;
    bad["keeper_fd"] = -1;
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("keeper"));
    bad = body;
    bad["http_listeners"][1]["fd"] = 5;  // the control socket's
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("descriptor of its own"));
    bad = body;
    bad["metrics_listener"]["fd"] = 7;  // an HTTP listener's
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("metrics listener"));
    bad = body;
    bad["metrics_listener"] = nullptr;
    CHECK_FALSE(parse_upgrade_state(bad).value().metrics_listener.has_value());
    bad = body;
    bad.erase("http_listeners");
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("\"http_listeners\""));
    bad = body;
    bad["socket_activated"] = 0;
    CHECK_THAT(parse_upgrade_state(bad).error(), Catch::Contains("\"socket_activated\""));
}

TEST_CASE("upgrade state: a running server's supervisor keeps its pid, stability and health") {
    SupervisorFixture before;
    before.run();
    REQUIRE(before.sup.state() == ServerState::running);
    CHECK(before.sup.carriable());
    before.env.advance(10s);  // of its 30 s until stable
    const json snapshot = before.sup.snapshot();
    CHECK(snapshot["pid"] == before.sup.pid());
    CHECK(snapshot["running_ms"] == 10000);

    SupervisorFixture after;
    after.env.advance(std::chrono::duration_cast<Duration>(before.env.now() - after.env.now()));
    REQUIRE(after.sup.restore(snapshot).ok());
    CHECK(after.sup.state() == ServerState::running);
    CHECK(after.sup.pid() == before.sup.pid());
    CHECK(after.env.spawn_calls == 0);  // the process is taken over, never started again
    CHECK(after.env.last_armed(TimerKind::stable) == 20s);
    CHECK(after.env.last_armed(TimerKind::health) == 20s);
    CHECK(after.sup.snapshot().dump() == snapshot.dump());
    // It is supervised as before: a health ping goes unanswered, it is ended as unresponsive.
    after.fire(TimerKind::health);
    CHECK(after.env.pings == 1);
    CHECK_FALSE(after.sup.carriable());  // its ping waits for an answer
    // A crash of the carried process restarts it, counted.
    after.sup.on_health_reply();
    after.sup.on_exit(1);
    CHECK(after.sup.state() == ServerState::backoff);
}

TEST_CASE("upgrade state: a server's box round-trips, and a leaf that is not one refuses the state") {
    UpgradeState state;
    state.pid = 7;
    state.control_fd = 5;
    CarriedBox box;
    box.boxed = true;
    box.enforced = {"network none: a private network namespace"};
    box.unenforced = {"memory: no delegated cgroup"};
    box.cgroup_leaf = "/sys/fs/cgroup/mcpd/servers/web-3";
    box.ended_leaves = {"/sys/fs/cgroup/mcpd/servers/web-2"};
    box.oom_kills = 2;
    box.counted = true;
    state.servers.push_back({"web", SupervisorFixture().sup.snapshot(), std::nullopt, std::nullopt, std::nullopt, box});
    const json body = to_json(state);
    const Result<UpgradeState> parsed = read_back(body);
    REQUIRE(parsed->servers[0].box.has_value());
    CHECK(*parsed->servers[0].box == box);

    const auto refused = [&](const std::function<void(json&)>& change) { return refusal_of(body, change); };
    CHECK_THAT(refused([](json& b) { b["servers"][0]["box"]["cgroup_leaf"] = "relative/leaf"; }),
               Catch::Contains("not an absolute path"));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["box"]["ended_leaves"] = {"/sys/fs/cgroup/../etc"}; }),
               Catch::Contains("not an absolute path"));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["box"]["counted"] = false; }),
               Catch::Contains("never counted"));
    CHECK_THAT(refused([](json& b) { b["servers"][0]["box"]["enforced"] = {3}; }),
               Catch::Contains("not a text"));
    // A state without boxes (version 2) is read as having none.
    json old = body;
    old["servers"][0].erase("box");
    const Result<UpgradeState> without = parse_upgrade_state(old);
    REQUIRE(without.ok());
    CHECK_FALSE(without->servers[0].box.has_value());
}

TEST_CASE("a carried cgroup leaf is taken only inside mcpd's delegated cgroup") {
    ServerCgroup cgroup;
    const Result<Done> outside = cgroup.restore({"/sys/fs/cgroup/someone-else/leaf", {}, 0, true});
    REQUIRE_FALSE(outside.ok());
    CHECK_THAT(outside.error(), Catch::Contains("not in mcpd's delegated cgroup"));
    CHECK_FALSE(cgroup.active());  // nothing taken
    const std::string& root = sandbox::delegated_cgroup();
    if (!root.empty()) {
        CHECK_FALSE(cgroup.restore({root + "/../escape", {}, 0, true}).ok());
        REQUIRE(cgroup.restore({root + "/web-1", {root + "/web-0"}, 3, true}).ok());
        CHECK(cgroup.carried() == ServerCgroup::Carried{root + "/web-1", {root + "/web-0"}, 3, true});
        REQUIRE(cgroup.restore({"", {}, 0, false}).ok());  // nothing of the test's to remove at the end
    }
    // Nothing at all is always taken: a server that never had a cgroup.
    CHECK(cgroup.restore({"", {}, 0, false}).ok());
    CHECK_FALSE(cgroup.active());
}
