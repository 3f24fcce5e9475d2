// What a restricted user sees of the servers it may use: its own sessions and projects only,
// in status, sessions, stats, top and metrics, while root sees everything. Root's sessions
// (their client names, pids, the project directory) and a server the user may not use never
// appear in anything the user is shown.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

std::string allow_only(const OtherUser& user) {
    return "[\"" + user.id() + "\"]";
}

RunResult ctl_as_restricted(const OtherUser& user, const TestEnv& env,
                            const std::vector<std::string>& args) {
    std::vector<std::string> argv{bin("mcpctl"), "--socket", env.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(user.command(argv));
}

// A project directory `user` may enter, resolved.
std::string visible_project(const TestEnv& env, const std::string& name) {
    const std::string path = env.path(name);
    REQUIRE(::mkdir(path.c_str(), 0755) == 0);
    char* real = ::realpath(path.c_str(), nullptr);
    REQUIRE(real != nullptr);
    const std::string resolved(real);
    ::free(real);
    return resolved;
}

// `mcpctl connect SERVER` run in `directory` by `argv_prefix` (a user's setpriv, or nothing).
std::unique_ptr<PipedProcess> connect_from(const TestEnv& env, const std::vector<std::string>& as,
                                           const std::string& directory, const std::string& server,
                                           const std::string& err) {
    std::vector<std::string> argv = as;
    for (const std::string& word : {std::string("/bin/sh"), std::string("-c"),
                                    "cd '" + directory + "' && exec '" + bin("mcpctl") +
                                        "' --socket '" + env.socket() + "' connect " + server})
        argv.push_back(word);
    return std::make_unique<PipedProcess>(argv, env.path(err));
}

// The user's setpriv prefix (its command without a program).
std::vector<std::string> setpriv_prefix(const OtherUser& user) {
    return user.command({});
}

// Nothing of root's sessions or of the hidden server in `text`.
void shows_nothing_of_root(const std::string& what, const std::string& text,
                           const std::string& root_project, pid_t root_pid) {
    INFO(what << ":\n" << text);
    CHECK(text.find("hidden") == std::string::npos);
    CHECK(text.find("root-agent") == std::string::npos);
    CHECK(text.find(root_project) == std::string::npos);
    CHECK(text.find("\"pid\":" + std::to_string(root_pid)) == std::string::npos);
    CHECK(text.find("\"uid\":0") == std::string::npos);
}

}  // namespace

TEST_CASE("a restricted user sees its own sessions and projects only, root sees all",
          "[access][visibility]") {
    const OtherUser user;
    TestEnv env("user-visibility");
    env.write_registry(
        kOpenSocket + server_toml("hidden") +
        server_toml("shared", {}, {{"allow_users", allow_only(user)}}) +
        server_toml("proj", {}, {{"allow_users", allow_only(user)}, {"sharing", "\"project\""}}));
    open_directory(env.dir(), true);
    env.start_daemon();
    env.wait_state("hidden", "running");
    env.wait_state("shared", "running");
    const std::string root_project = visible_project(env, "root-project");
    const std::string user_project = visible_project(env, "user-project");

    // Root works on all three, in a project of its own.
    McpSession on_hidden(env.socket(), "hidden");
    on_hidden.initialize("root-agent-hidden");
    McpSession on_shared(env.socket(), "shared");
    on_shared.initialize("root-agent-shared");
    const auto root_proj = connect_from(env, {}, root_project, "proj", "root-proj.err");
    root_proj->session().initialize("root-agent-proj");
    const pid_t root_pid = root_proj->pid();
    // The user has one session of its own, on the project server, in its project.
    const auto mine = connect_from(env, setpriv_prefix(user), user_project, "proj", "mine.err");
    mine->session().initialize("user-agent");
    for (McpSession* s : {&on_shared, &root_proj->session(), &mine->session()})
        s->wait_response(s->request("tools/list"));

    SECTION("status: its servers, and of the project server only its own project") {
        const RunResult machine = ctl_as_restricted(user, env, {"--json", "status"});
        REQUIRE(machine.exit_code == 0);
        shows_nothing_of_root("status --json", machine.out, root_project, root_pid);
        const json status = json::parse(machine.out);
        REQUIRE(status["servers"].size() == 2);
        for (const json& server : status["servers"]) {
            if (server["name"] != "proj") continue;
            REQUIRE(server["children"].size() == 1);
            CHECK(server["children"][0]["project"] == user_project);
        }
        const RunResult text = ctl_as_restricted(user, env, {"status"});
        REQUIRE(text.exit_code == 0);
        shows_nothing_of_root("status", text.out, root_project, root_pid);
        CHECK(text.out.find(user_project) != std::string::npos);
        // Root sees both projects.
        const RunResult full = env.ctl({"status"});
        CHECK(full.out.find(root_project) != std::string::npos);
        CHECK(full.out.find(user_project) != std::string::npos);
    }

    SECTION("sessions: its own session only") {
        const RunResult listed = ctl_as_restricted(user, env, {"--json", "sessions"});
        REQUIRE(listed.exit_code == 0);
        shows_nothing_of_root("sessions --json", listed.out, root_project, root_pid);
        const json sessions = json::parse(listed.out)["sessions"];
        REQUIRE(sessions.size() == 1);
        CHECK(sessions[0]["client"]["name"] == "user-agent");
        CHECK(sessions[0]["uid"] == user.uid());
        CHECK(sessions[0]["project"] == user_project);
        const RunResult text = ctl_as_restricted(user, env, {"sessions", "shared"});
        REQUIRE(text.exit_code == 0);
        shows_nothing_of_root("sessions shared", text.out, root_project, root_pid);
        CHECK(json::parse(env.ctl({"--json", "sessions"}).out)["sessions"].size() == 4);
    }

    SECTION("stats and top: its sessions and children only, the servers' figures whole") {
        const RunResult ran = ctl_as_restricted(
            user, env, {"--json", "stats", "--tools", "--sessions", "--children"});
        REQUIRE(ran.exit_code == 0);
        shows_nothing_of_root("stats --json", ran.out, root_project, root_pid);
        const json stats = json::parse(ran.out);
        REQUIRE(stats["servers"].size() == 2);
        for (const json& server : stats["servers"]) {
            INFO(server.dump());
            if (server["name"] == "shared") {
                CHECK(server["sessions_detail"].empty());
                CHECK(server["per_child"].size() == 1);  // the shared process
                CHECK(server["sessions"] == 1);          // a count, not whose
            } else {
                REQUIRE(server["sessions_detail"].size() == 1);
                CHECK(server["sessions_detail"][0]["client"]["name"] == "user-agent");
                REQUIRE(server["per_child"].size() == 1);
                CHECK(server["per_child"][0]["project"] == user_project);
                CHECK(server["totals"]["requests"] == 2);  // both projects' tools/list
            }
        }
        for (const std::vector<std::string>& args :
             {std::vector<std::string>{"stats", "--sessions", "--children"},
              std::vector<std::string>{"top", "--iterations", "1"}}) {
            const RunResult text = ctl_as_restricted(user, env, args);
            REQUIRE(text.exit_code == 0);
            shows_nothing_of_root(args.front(), text.out, root_project, root_pid);
        }
        // Root's view has everything.
        const json full = json::parse(env.ctl({"--json", "stats", "--sessions", "--children"}).out);
        CHECK(full["servers"].size() == 3);
        CHECK(full.dump().find(root_project) != std::string::npos);
        CHECK(full.dump().find("root-agent-shared") != std::string::npos);
    }

    SECTION("metrics: its servers only") {
        const RunResult metrics = ctl_as_restricted(user, env, {"metrics"});
        REQUIRE(metrics.exit_code == 0);
        shows_nothing_of_root("metrics", metrics.out, root_project, root_pid);
        CHECK(metrics.out.find("mcpd_server_up{server=\"shared\"} 1") != std::string::npos);
        CHECK(env.ctl({"metrics"}).out.find("server=\"hidden\"") != std::string::npos);
    }
}
