// Every session acts as its user: a second local user, allowed on a project server, tries to
// make its child run in directories that only mcpd's user may open, and to take every child
// slot. mcpd (root here, as in CI) opens each directory with the user's own identity, keys
// projects by user, and keeps the last slot for its owner.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "call_text.h"
#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

// A project server the other user may use, on a socket every user can reach.
void start_project_server(TestEnv& env, const OtherUser& user, const std::string& max_children) {
    env.write_registry(kOpenSocket + server_toml("proj", {},
                                                 {{"sharing", "\"project\""},
                                                  {"max_children", max_children},
                                                  {"allow_users", "[\"" + user.id() + "\"]"}}));
    env.start_daemon();
    open_directory(env.dir());
}

// A directory in the test's own, owned by `owner` with `mode`.
std::string make_directory(const TestEnv& env, const std::string& name, uid_t owner, mode_t mode) {
    const std::string path = env.path(name);
    REQUIRE(::mkdir(path.c_str(), 0700) == 0);
    REQUIRE(::chown(path.c_str(), owner, static_cast<gid_t>(owner)) == 0);
    REQUIRE(::chmod(path.c_str(), mode) == 0);
    return std::filesystem::canonical(path).string();
}

// `mcpctl connect proj` as `user`, started in `directory`.
std::unique_ptr<PipedProcess> connect_project_as(const OtherUser& user, const TestEnv& env,
                                         const std::string& directory, const std::string& err) {
    return std::make_unique<PipedProcess>(
        user.command({"/bin/sh", "-c",
                      "cd '" + directory + "' && exec '" + bin("mcpctl") + "' --socket '" +
                          env.socket() + "' connect proj"}),
        env.path(err));
}

// The reply to an attach of `proj` with `cwd`, sent by `user` straight on the socket (as any
// client may, naming any directory).
std::string attach_reply_as(const OtherUser& user, const TestEnv& env, const std::string& cwd) {
    const std::string script =
        "import json, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "s.connect(sys.argv[1])\n"
        "s.sendall((json.dumps({'protocol': 1, 'command': 'attach', 'server': 'proj',"
        " 'cwd': sys.argv[2]}) + '\\n').encode())\n"
        "print(s.makefile().readline(), end='')\n";
    const RunResult run =
        run_process(user.command({"/usr/bin/python3", "-c", script, env.socket(), cwd}), 20s);
    INFO(run.describe());
    REQUIRE(run.exit_code == 0);
    return run.out;
}

// Initialize with the roots capability and answer mcpd's roots/list with `uri`.
void report_root(McpSession& session, const std::string& uri) {
    session.initialize("agent", {{"roots", {{"listChanged", true}}}});
    const std::optional<McpMessage> asked = session.wait_for(
        [](const McpMessage& m) { return m.is_request() && m.method() == "roots/list"; }, 10s);
    REQUIRE(asked);
    session.send_line(R"({"jsonrpc":"2.0","id":)" + asked->raw_id() +
                      R"(,"result":{"roots":[{"uri":")" + uri + R"("}]}})");
}

// The real uid a process runs as (/proc/PID/status).
uid_t process_uid(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("Uid:", 0) == 0) return static_cast<uid_t>(std::stoul(line.substr(4)));
    }
    FAIL("no Uid line for pid " << pid);
    return 0;
}

// The projects the server's children serve now.
std::vector<std::string> child_projects(const TestEnv& env) {
    std::vector<std::string> out;
    const json listed = env.server("proj");
    for (const json& child : listed.value("children", json::array()))
        out.push_back(child.value("project", ""));
    return out;
}

}  // namespace

TEST_CASE("an allowed user cannot make a project of a directory it cannot open", "[identity]") {
    const OtherUser user;
    TestEnv env("identity-cwd");
    start_project_server(env, user, "4");
    const std::string secret = make_directory(env, "secret", 0, 0700);
    const std::string own = make_directory(env, "own", user.uid(), 0700);

    // The owner's 0700 directory, named in the attach: refused, naming it and why.
    const std::string refused = attach_reply_as(user, env, secret);
    INFO(refused);
    CHECK(refused.find("\"ok\":false") != std::string::npos);
    CHECK(refused.find(secret) != std::string::npos);
    CHECK(refused.find("uid " + user.id() + " cannot open it") != std::string::npos);
    // `/` and a path through a symlink resolve before the check, like any other.
    REQUIRE(::symlink(secret.c_str(), env.path("alias").c_str()) == 0);
    CHECK(attach_reply_as(user, env, env.path("alias")).find("cannot open it") !=
          std::string::npos);
    CHECK(env.marked_processes().empty());

    // Its own directory is its project: the child runs there, as the user (mcpd is root).
    auto agent = connect_project_as(user, env, own, "agent.err");
    agent->session().initialize("agent");
    CHECK(call_text(agent->session(), "cwd") == own);
    CHECK(child_projects(env) == std::vector<std::string>{own});
    const std::vector<pid_t> children = env.marked_processes();
    REQUIRE(children.size() == 1);
    CHECK(process_uid(children.front()) == user.uid());
}

TEST_CASE("an allowed user's roots name only directories it can open", "[identity]") {
    const OtherUser user;
    TestEnv env("identity-roots");
    start_project_server(env, user, "4");
    const std::string secret = make_directory(env, "secret", 0, 0700);
    const std::string own = make_directory(env, "own", user.uid(), 0700);

    for (const std::string& uri : {"file://" + secret, std::string("file:///root")}) {
        INFO(uri);
        auto agent = connect_project_as(user, env, own, "agent.err");
        report_root(agent->session(), uri);
        // The session ends with the reason; no child ever runs in the directory.
        CHECK(agent->wait_exit(20s).has_value());
        for (const std::string& project : child_projects(env)) CHECK(project == own);
    }
    const std::string log = env.daemon_log();
    CHECK(log.find("the directory " + secret + " cannot be used as a project: uid " + user.id() +
                   " cannot open it") != std::string::npos);

    // A file on another host is no directory here: never `{project}`, never the child's cwd.
    // The session is kept on its working directory, and the log says why.
    auto remote = connect_project_as(user, env, own, "remote.err");
    report_root(remote->session(), "file://otherhost/etc");
    CHECK(call_text(remote->session(), "cwd") == own);
    for (const std::string& project : child_projects(env)) CHECK(project == own);
    CHECK(env.daemon_log().find("not an absolute URI of this machine") != std::string::npos);

    // Root, reporting the same directory, is served there: the check is the peer's.
    McpSession root(env.socket(), "proj");
    report_root(root, "file://" + secret);
    CHECK(call_text(root, "cwd") == secret);
}

TEST_CASE("an allowed user never takes the owner's last child slot", "[identity]") {
    const OtherUser user;
    TestEnv env("identity-slots");
    start_project_server(env, user, "2");
    const std::string first = make_directory(env, "first", user.uid(), 0700);
    const std::string second = make_directory(env, "second", user.uid(), 0700);
    const std::string owners = make_directory(env, "owners", 0, 0700);

    auto agent = connect_project_as(user, env, first, "first.err");
    agent->session().initialize("agent");
    CHECK(call_text(agent->session(), "cwd") == first);
    // A second project of the user's would take the last of max_children = 2.
    const std::string refused = attach_reply_as(user, env, second);
    INFO(refused);
    CHECK(refused.find("keeps the last for mcpd's own user") != std::string::npos);
    // The owner still gets it.
    auto owner = std::make_unique<PipedProcess>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "cd '" + owners + "' && exec '" + bin("mcpctl") + "' --socket '" +
                                     env.socket() + "' connect proj"},
        env.path("owner.err"));
    owner->session().initialize("owner");
    CHECK(call_text(owner->session(), "cwd") == owners);
    CHECK(env.marked_processes().size() == 2);
}

TEST_CASE("two users in one directory never share a child", "[identity]") {
    const OtherUser user;
    TestEnv env("identity-shared-dir");
    start_project_server(env, user, "4");
    const std::string common = make_directory(env, "common", 0, 0755);

    auto theirs = connect_project_as(user, env, common, "theirs.err");
    theirs->session().initialize("theirs");
    CHECK(call_text(theirs->session(), "cwd") == common);
    auto mine = std::make_unique<PipedProcess>(
        std::vector<std::string>{"/bin/sh", "-c",
                                 "cd '" + common + "' && exec '" + bin("mcpctl") + "' --socket '" +
                                     env.socket() + "' connect proj"},
        env.path("mine.err"));
    mine->session().initialize("mine");
    CHECK(call_text(mine->session(), "cwd") == common);
    // One child each, each as its own user.
    std::vector<uid_t> uids;
    for (const pid_t pid : env.marked_processes()) uids.push_back(process_uid(pid));
    std::sort(uids.begin(), uids.end());
    CHECK(uids == std::vector<uid_t>{0, user.uid()});
}

TEST_CASE("sharing = \"user\": one child per user, as that user, shared by its sessions",
          "[identity]") {
    const OtherUser user;
    TestEnv env("identity-user-mode");
    REQUIRE(::mkdir(env.path("work").c_str(), 0755) == 0);
    const std::string work = std::filesystem::canonical(env.path("work")).string();
    env.write_registry(kOpenSocket + server_toml("per-user", {},
                                                 {{"sharing", "\"user\""},
                                                  {"cwd", "\"" + work + "\""},
                                                  {"allow_users", "[\"" + user.id() + "\"]"}}));
    env.start_daemon();
    open_directory(env.dir());

    // Two sessions of the other user: one child, as that user.
    std::vector<std::unique_ptr<PipedProcess>> theirs;
    for (int i = 0; i < 2; ++i) {
        theirs.push_back(std::make_unique<PipedProcess>(
            user.command({bin("mcpctl"), "--socket", env.socket(), "connect", "per-user"}),
            env.path("theirs" + std::to_string(i) + ".err")));
        theirs.back()->session().initialize("theirs");
        CHECK(call_text(theirs.back()->session(), "cwd") == work);
    }
    std::vector<pid_t> children = env.marked_processes();
    REQUIRE(children.size() == 1);
    CHECK(process_uid(children.front()) == user.uid());

    // Root's session: a child of its own.
    McpSession mine(env.socket(), "per-user");
    mine.initialize("mine");
    CHECK(call_text(mine, "cwd") == work);
    children = env.marked_processes();
    std::vector<uid_t> uids;
    for (const pid_t pid : children) uids.push_back(process_uid(pid));
    std::sort(uids.begin(), uids.end());
    CHECK(uids == std::vector<uid_t>{0, user.uid()});
    const json server = env.server("per-user");
    INFO(server.dump());
    CHECK(server["children"].size() == 2);
}
