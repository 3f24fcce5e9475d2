// sharing = "project": sessions share a child only with sessions of the same project (here,
// the directory `mcpctl connect` runs in); each child runs in its project and is answered
// roots/list with it; max_children bounds the children; the last session's leaving stops one.
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "call_text.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

std::string make_project(const TestEnv& env, const std::string& name) {
    const std::string path = env.path(name);
    REQUIRE(::mkdir(path.c_str(), 0700) == 0);
    char* real = ::realpath(path.c_str(), nullptr);
    REQUIRE(real != nullptr);
    const std::string resolved(real);
    ::free(real);
    return resolved;
}

// `mcpctl connect NAME` started in `directory`, as an agent working there starts it.
std::unique_ptr<PipedProcess> connect_in(const TestEnv& env, const std::string& directory,
                                         const std::string& server, const std::string& err) {
    return std::make_unique<PipedProcess>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "cd '" + directory + "' && exec '" + bin("mcpctl") +
                                     "' --socket '" + env.socket() + "' connect " + server},
        env.path(err));
}

std::string project_registry(const std::string& max_children) {
    return server_toml("proj", {}, {{"sharing", "\"project\""}, {"max_children", max_children}});
}

}  // namespace

TEST_CASE("sessions of one project share a child, another project gets its own", "[project]") {
    TestEnv env("project-share");
    env.write_registry(project_registry("4"));
    env.start_daemon();
    const std::string one = make_project(env, "one");
    const std::string two = make_project(env, "two");

    // Nothing starts before a session names its project.
    CHECK(env.marked_processes().empty());

    std::vector<std::unique_ptr<PipedProcess>> agents;
    for (const std::string& dir : {one, one, two, two}) {
        agents.push_back(connect_in(env, dir, "proj", "connect" + std::to_string(agents.size())));
        agents.back()->session().initialize("agent-" + std::to_string(agents.size()));
    }
    // Each child runs in its project, and answers the child's roots/list with it, at once and
    // without asking the session (whose client declared no roots).
    for (std::size_t i = 0; i < agents.size(); ++i) {
        const std::string& dir = i < 2 ? one : two;
        INFO("agent " << i);
        CHECK(call_text(agents[i]->session(), "cwd") == dir);
        CHECK(call_text(agents[i]->session(), "roots") == "file://" + dir);
    }
    CHECK(env.marked_processes().size() == 2);

    // status: one line per child, with its project, pid and sessions.
    const json server = env.server("proj");
    INFO(server.dump());
    REQUIRE(server["children"].is_array());
    REQUIRE(server["children"].size() == 2);
    CHECK(server["sessions"] == 4);
    std::vector<std::string> projects;
    for (const json& child : server["children"]) {
        projects.push_back(child["project"].get<std::string>());
        CHECK(child["sessions"] == 2);
        CHECK(child["state"] == "running");
        CHECK(child["pid"].is_number_integer());
    }
    std::sort(projects.begin(), projects.end());
    CHECK(projects == std::vector<std::string>{one, two});
    const RunResult table = env.ctl({"status"});
    CHECK(table.exit_code == 0);
    CHECK(table.out.find(one) != std::string::npos);
    CHECK(table.out.find(two) != std::string::npos);

    // sessions: each session's project.
    const RunResult sessions = env.ctl({"--json", "sessions"});
    REQUIRE(sessions.exit_code == 0);
    const json listed = json::parse(sessions.out);
    std::size_t in_one = 0, in_two = 0;
    for (const json& s : listed["sessions"]) {
        in_one += s["project"] == one ? 1 : 0;
        in_two += s["project"] == two ? 1 : 0;
    }
    CHECK(in_one == 2);
    CHECK(in_two == 2);

    // The last session of a project leaves (idle_timeout = 0): its child stops; the other
    // project's child keeps serving.
    agents.erase(agents.begin(), agents.begin() + 2);
    wait_until("project one's child to stop", 20s,
               [&] { return env.marked_processes().size() == 1; });
    CHECK(call_text(agents[0]->session(), "cwd") == two);
    // Coming back starts a child for it again.
    auto back = connect_in(env, one, "proj", "back");
    back->session().initialize("back");
    CHECK(call_text(back->session(), "cwd") == one);
    CHECK(env.marked_processes().size() == 2);
}

TEST_CASE("max_children bounds the projects served at once, with a sentence naming it",
          "[project]") {
    TestEnv env("project-cap");
    env.write_registry(project_registry("1"));
    env.start_daemon();
    const std::string one = make_project(env, "one");
    const std::string two = make_project(env, "two");

    auto first = connect_in(env, one, "proj", "first");
    first->session().initialize("first");
    CHECK(call_text(first->session(), "cwd") == one);
    // The same project is no new child.
    auto same = connect_in(env, one, "proj", "same");
    same->session().initialize("same");
    CHECK(call_text(same->session(), "cwd") == one);

    // Another project is refused, and mcpctl says why.
    const RunResult refused =
        run_process({"/bin/sh", "-c",
                     "cd '" + two + "' && exec '" + bin("mcpctl") + "' --socket '" + env.socket() +
                         "' connect proj </dev/null"},
                    20s);
    INFO(refused.describe());
    CHECK(refused.exit_code != 0);
    CHECK(refused.err.find("max_children") != std::string::npos);
    CHECK(refused.err.find("one per project") != std::string::npos);
    CHECK(env.marked_processes().size() == 1);

    // Once project one's sessions are gone, project two is served.
    first.reset();
    same.reset();
    wait_until("project one's child to stop", 20s, [&] { return env.marked_processes().empty(); });
    auto second = connect_in(env, two, "proj", "second");
    second->session().initialize("second");
    CHECK(call_text(second->session(), "cwd") == two);
}

TEST_CASE("a project's child with an idle_timeout outlives its last session by that long",
          "[project]") {
    TestEnv env("project-idle");
    env.write_registry(
        server_toml("proj", {}, {{"sharing", "\"project\""}, {"idle_timeout", "\"5s\""}}));
    env.start_daemon();
    const std::string one = make_project(env, "one");
    {
        auto agent = connect_in(env, one, "proj", "agent");
        agent->session().initialize("agent");
        CHECK(call_text(agent->session(), "cwd") == one);
    }
    // Still there right after the session left, gone after the idle timeout.
    CHECK(env.marked_processes().size() == 1);
    wait_until("the idle child to stop", 20s, [&] { return env.marked_processes().empty(); });
    // The same project again: a child again, in the same place.
    auto again = connect_in(env, one, "proj", "again");
    again->session().initialize("again");
    CHECK(call_text(again->session(), "cwd") == one);
}

TEST_CASE("a session attached on the socket without a directory is keyed by the registry's cwd",
          "[project]") {
    TestEnv env("project-socket");
    const std::string fixed = make_project(env, "fixed");
    env.write_registry(
        server_toml("proj", {}, {{"sharing", "\"project\""}, {"cwd", toml_string(fixed)}}));
    env.start_daemon();
    McpSession a(env.socket(), "proj");
    a.initialize("a");
    McpSession b(env.socket(), "proj");
    b.initialize("b");
    CHECK(call_text(a, "cwd") == fixed);
    CHECK(call_text(b, "cwd") == fixed);
    CHECK(env.marked_processes().size() == 1);
}

TEST_CASE("a client's roots are its project, wherever mcpctl connect runs", "[project]") {
    TestEnv env("project-roots");
    env.write_registry(project_registry("4"));
    env.start_daemon();
    const std::string one = make_project(env, "one");
    const std::string two = make_project(env, "two");
    const std::string elsewhere = make_project(env, "elsewhere");

    // Every agent starts in the same directory; their roots name their projects.
    std::vector<std::unique_ptr<PipedProcess>> agents;
    for (const std::string& root : {one, two, one, two}) {
        agents.push_back(
            connect_in(env, elsewhere, "proj", "agent" + std::to_string(agents.size())));
        McpSession& session = agents.back()->session();
        session.initialize("agent", {{"roots", {{"listChanged", true}}}});
        const std::optional<McpMessage> asked = session.wait_for(
            [](const McpMessage& m) { return m.is_request() && m.method() == "roots/list"; }, 10s);
        REQUIRE(asked);
        session.send_line(R"({"jsonrpc":"2.0","id":)" + asked->raw_id() +
                          R"(,"result":{"roots":[{"uri":"file://)" + root + R"(/","name":"p"}]}})");
    }
    for (std::size_t i = 0; i < agents.size(); ++i) {
        const std::string& root = i % 2 == 0 ? one : two;
        INFO("agent " << i);
        CHECK(call_text(agents[i]->session(), "cwd") == root);
        // The child's own roots/list is its project's, answered by mcpd.
        CHECK(call_text(agents[i]->session(), "roots") == "file://" + root);
    }
    // Two projects, two children: the working directory's project got none.
    CHECK(env.marked_processes().size() == 2);
    const json server = env.server("proj");
    INFO(server.dump());
    REQUIRE(server["children"].size() == 2);
    for (const json& child : server["children"]) {
        CHECK(child["project"] != elsewhere);
        CHECK(child["sessions"] == 2);
    }
    CHECK(env.daemon_log().find("is served by the child of project " + two) != std::string::npos);
}

namespace {

// Initialize with the roots capability and answer mcpd's roots/list with `root`.
void initialize_with_root(McpSession& session, const std::string& name, const std::string& root) {
    session.initialize(name, {{"roots", {{"listChanged", true}}}});
    const std::optional<McpMessage> asked = session.wait_for(
        [](const McpMessage& m) { return m.is_request() && m.method() == "roots/list"; }, 10s);
    REQUIRE(asked);
    session.send_line(R"({"jsonrpc":"2.0","id":)" + asked->raw_id() +
                      R"(,"result":{"roots":[{"uri":"file://)" + root + R"("}]}})");
}

// The client's roots changed to `root`: it says so and answers mcpd's roots/list.
void change_root(McpSession& session, const std::string& root) {
    session.notify("notifications/roots/list_changed");
    const std::optional<McpMessage> asked = session.wait_for(
        [](const McpMessage& m) { return m.is_request() && m.method() == "roots/list"; }, 10s);
    REQUIRE(asked);
    session.send_line(R"({"jsonrpc":"2.0","id":)" + asked->raw_id() +
                      R"(,"result":{"roots":[{"uri":"file://)" + root + R"("}]}})");
}

// Two projects, and two sessions of the first on its child: `mover` (whose roots will
// change) and `stayer`.
struct TwoSessionsOfOne {
    explicit TwoSessionsOfOne(const std::string& name)
        : env(name),
          one((start(env), make_project(env, "one"))),
          two(make_project(env, "two")),
          mover(env.socket(), "proj"),
          stayer(env.socket(), "proj") {
        initialize_with_root(mover, "mover", one);
        initialize_with_root(stayer, "stayer", one);
        CHECK(call_text(mover, "cwd") == one);
        CHECK(call_text(stayer, "cwd") == one);
    }
    static void start(TestEnv& env) {
        env.write_registry(project_registry("4"));
        env.start_daemon();
    }
    TestEnv env;
    const std::string one, two;
    McpSession mover, stayer;
};

}  // namespace

TEST_CASE(
    "a session whose roots change moves to its new project's child, its call in flight "
    "finishes on the old one",
    "[project]") {
    TwoSessionsOfOne s("project-move");
    TestEnv& env = s.env;
    const std::string& one = s.one;
    const std::string& two = s.two;
    McpSession& mover = s.mover;
    McpSession& stayer = s.stayer;

    // A slow call at project one's child, then the roots change.
    const json slow = mover.call_tool("slow", {{"steps", 5}, {"interval_ms", 200}});
    change_root(mover, two);
    // The client is told to re-read its lists, and new calls go to project two's child.
    const std::optional<McpMessage> relist = mover.wait_for(
        [](const McpMessage& m) { return m.method() == "notifications/tools/list_changed"; }, 10s);
    CHECK(relist);
    CHECK(call_text(mover, "cwd") == two);
    CHECK(call_text(mover, "roots") == "file://" + two);
    // The call in flight was not cancelled: it finishes where it started.
    const McpMessage finished = mover.wait_response(slow, 20s);
    CHECK_FALSE(finished.is_error());
    // The other session of project one stays on it.
    CHECK(call_text(stayer, "cwd") == one);
    CHECK(env.marked_processes().size() == 2);
    const json server = env.server("proj");
    INFO(server.dump());
    REQUIRE(server["children"].size() == 2);
    for (const json& child : server["children"]) CHECK(child["sessions"] == 1);
}

TEST_CASE("a session alone on its child whose roots change keeps the child, which is told",
          "[project]") {
    TestEnv env("project-rekey");
    const std::string fixed = make_project(env, "fixed");
    // A fixed cwd: nothing of the child depends on its project but its roots.
    env.write_registry(
        server_toml("proj", {}, {{"sharing", "\"project\""}, {"cwd", toml_string(fixed)}}));
    env.start_daemon();
    const std::string one = make_project(env, "one");
    const std::string two = make_project(env, "two");
    McpSession alone(env.socket(), "proj");
    initialize_with_root(alone, "alone", one);
    CHECK(call_text(alone, "roots") == "file://" + one);
    const std::vector<pid_t> before = env.marked_processes();
    REQUIRE(before.size() == 1);

    change_root(alone, two);
    // The same process now answers with the new roots (mcpd told it roots/list_changed).
    wait_until("the child to serve project two", 10s,
               [&] { return env.server("proj")["children"][0]["project"] == two; });
    CHECK(call_text(alone, "roots") == "file://" + two);
    CHECK(env.marked_processes() == before);
    CHECK(env.daemon_log().find("notifications/roots/list_changed sent") != std::string::npos);
}

TEST_CASE("start, stop and restart of a project server act on its children", "[project]") {
    TestEnv env("project-admin");
    env.write_registry(project_registry("4"));
    env.start_daemon();
    // Nothing to start without a project: no process runs, and --wait returns at once.
    const RunResult started = env.ctl({"start", "--wait", "proj"}, 20s);
    INFO(started.describe());
    CHECK(started.exit_code == 0);
    CHECK(env.marked_processes().empty());

    McpSession agent(env.socket(), "proj");
    agent.initialize("agent");
    CHECK_FALSE(call_text(agent, "cwd").empty());
    const std::vector<pid_t> before = env.marked_processes();
    REQUIRE(before.size() == 1);
    const RunResult restarted = env.ctl({"restart", "proj"});
    CHECK(restarted.exit_code == 0);
    wait_until("a new child process", 20s, [&] {
        const std::vector<pid_t> now = env.marked_processes();
        return now.size() == 1 && now != before;
    });
    const RunResult stopped = env.ctl({"stop", "--wait", "proj"}, 20s);
    CHECK(stopped.exit_code == 0);
    wait_until("the child to stop", 20s, [&] { return env.marked_processes().empty(); });
}

TEST_CASE("a session that moved cancels its call still at its old project's child", "[project]") {
    TwoSessionsOfOne s("project-move-cancel");
    TestEnv& env = s.env;
    const std::string& one = s.one;
    const std::string& two = s.two;
    McpSession& mover = s.mover;

    // 10 steps of 200 ms at project one's child, then the roots change and it is cancelled.
    const json slow = mover.call_tool("slow", {{"steps", 10}, {"interval_ms", 200}});
    change_root(mover, two);
    CHECK(call_text(mover, "cwd") == two);
    mover.notify("notifications/cancelled", {{"requestId", slow}, {"reason", "no longer needed"}});
    // The old child stopped working on it: no answer comes, not even after the 2 s it takes.
    mover.pump(3s);
    for (const McpMessage& m : mover.responses()) CHECK(m.json["id"] != slow);
    // And it is gone from the old child: project one's child serves only the other session.
    wait_until("the old child to hold one session", 10s, [&] {
        const json server = env.server("proj");
        for (const json& child : server["children"])
            if (child["project"] == one) return child["sessions"] == 1;
        return false;
    });
}

TEST_CASE("legacy clients of a dual-era project server get a legacy process per project",
          "[project][dual-era]") {
    TestEnv env("project-dual-era");
    env.write_registry(
        server_toml("proj", {"--era=dual"}, {{"sharing", "\"project\""}, {"max_children", "4"}}));
    env.start_daemon();
    const std::string one = make_project(env, "one");
    const std::string two = make_project(env, "two");

    // Each legacy client is served in its own project, by a process initialized for it.
    auto first = connect_in(env, one, "proj", "first");
    first->session().initialize("first");
    CHECK(call_text(first->session(), "cwd") == one);
    auto second = connect_in(env, two, "proj", "second");
    second->session().initialize("second");
    CHECK(call_text(second->session(), "cwd") == two);
    CHECK(call_text(first->session(), "cwd") == one);
    CHECK(env.daemon_log().find("is a legacy client: served by the legacy process") !=
          std::string::npos);
}

TEST_CASE("a session switching its roots over and over never runs more than max_children",
          "[project]") {
    TestEnv env("project-root-storm");
    // Children that take two seconds to stop: each one left behind still runs for that long.
    env.write_registry(server_toml("proj", {"--stdin-eof=ignore", "--ignore-sigterm"},
                                   {{"sharing", "\"project\""},
                                    {"max_children", "2"},
                                    {"stop_grace", "\"1s\""},
                                    {"stop_timeout", "\"1s\""}}));
    env.start_daemon();
    std::vector<std::string> projects;
    for (int i = 0; i < 4; ++i) projects.push_back(make_project(env, "p" + std::to_string(i)));

    McpSession session(env.socket(), "proj");
    initialize_with_root(session, "storm", projects[0]);
    std::size_t most = 0;
    bool refused = false;
    for (int round = 1; round <= 20 && !refused; ++round) {
        session.notify("notifications/roots/list_changed");
        const std::optional<McpMessage> asked = session.wait_for(
            [](const McpMessage& m) { return m.is_request() && m.method() == "roots/list"; }, 5s);
        if (!asked) {
            refused = true;  // the session was ended: no slot for its next project
            break;
        }
        session.send_line(R"({"jsonrpc":"2.0","id":)" + asked->raw_id() +
                          R"(,"result":{"roots":[{"uri":"file://)" + projects[round % 4] +
                          R"("}]}})");
        for (int look = 0; look < 5; ++look) {
            most = std::max(most, env.marked_processes().size());
            std::this_thread::sleep_for(20ms);
        }
        // Refused: mcpd ends the session (reading finds the end).
        session.wait_for([](const McpMessage&) { return false; }, 300ms);
        refused = session.at_eof();
    }
    INFO(env.daemon_log());
    CHECK(most <= 2);
    // The storm was stopped by the limit, with the reason in the log.
    CHECK(refused);
    CHECK(env.daemon_log().find("children, one per project (max_children") != std::string::npos);
}

TEST_CASE("a project's child that failed frees its slot for another project", "[project]") {
    TestEnv env("project-failed-slot");
    const std::string one = make_project(env, "one");
    const std::string two = make_project(env, "two");
    // Project one's child always exits at once (a marker file says so); two's runs.
    std::ofstream(one + "/fail") << "x";
    env.write_registry(server_toml(
        "proj",
        {"-c", "test -e '{project}/fail' && exit 3; exec '" + bin("mcpd-demo-server") + "'"},
        {{"sharing", "\"project\""},
         {"max_children", "1"},
         {"start_limit", "{ burst = 1, interval = \"60s\" }"}},
        "/bin/sh"));
    env.start_daemon();

    auto failing = connect_in(env, one, "proj", "failing");
    wait_until("project one's child to fail", 20s, [&] {
        const json listed = env.server("proj");
        for (const json& child : listed.value("children", json::array()))
            if (child["state"] == "failed") return true;
        return false;
    });
    // Its session is still attached; the failed child runs nothing and holds no slot.
    auto working = connect_in(env, two, "proj", "working");
    working->session().initialize("working");
    CHECK(call_text(working->session(), "cwd") == two);
}
