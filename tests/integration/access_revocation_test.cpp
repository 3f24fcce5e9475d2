// A reload that takes a user out of a server's allow_users ends that user's sessions on it,
// at once and saying why, while the server keeps its process and everyone still allowed keeps
// their sessions. A user left with no server at all loses its control connections too.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

std::string allow(const OtherUser& user) {
    return "[\"" + user.id() + "\"]";
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// `mcpctl connect SERVER` run as `user`, the way an agent runs it.
std::unique_ptr<PipedProcess> connect_as(const OtherUser& user, const TestEnv& env,
                                         const std::string& server, const std::string& err) {
    return std::make_unique<PipedProcess>(
        user.command({bin("mcpctl"), "--socket", env.socket(), "connect", server}), env.path(err));
}

std::string echo(McpSession& session, const std::string& text) {
    return session.wait_response(session.call_tool("echo", {{"text", text}})).tool_text();
}

}  // namespace

TEST_CASE("a reload that removes a user from allow_users ends its sessions on that server only",
          "[reload][session][access]") {
    const OtherUser user;
    TestEnv env("revoke-session");
    env.write_registry(kOpenSocket + server_toml("shared", {}, {{"allow_users", allow(user)}}) +
                       server_toml("other", {}, {{"allow_users", allow(user)}}));
    open_directory(env.dir());
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("shared", "running");
    env.wait_state("other", "running");
    const pid_t shared_pid = *env.server_pid("shared");
    const pid_t other_pid = *env.server_pid("other");

    const auto revoked = connect_as(user, env, "shared", "revoked.err");
    revoked->session().initialize("revoked-agent");
    REQUIRE(echo(revoked->session(), "before") == "before");
    const auto kept = connect_as(user, env, "other", "kept.err");
    kept->session().initialize("kept-agent");
    McpSession root(env.socket(), "shared");
    root.initialize("root-agent");

    // Only allow_users of "shared" changes: the user keeps "other".
    env.write_registry(kOpenSocket + server_toml("shared") +
                       server_toml("other", {}, {{"allow_users", allow(user)}}));
    const RunResult reload = env.ctl({"reload"});
    INFO(reload.describe());
    REQUIRE(reload.exit_code == 0);
    CHECK(reload.out.find("changed: shared\n") != std::string::npos);
    CHECK(reload.out.find("unchanged: other\n") != std::string::npos);

    // The revoked session's client sees its session end, with the reason.
    CHECK(revoked->session().wait_closed(10s));
    CHECK(revoked->wait_exit(10s) == 1);
    const std::string reason =
        "a reload removed uid " + user.id() + " from the allow_users/allow_groups of 'shared'";
    CHECK(read_file(env.path("revoked.err")).find(reason) != std::string::npos);
    CHECK(daemon.log().find("[shared] session") != std::string::npos);
    CHECK(daemon.log().find("ended: " + reason) != std::string::npos);

    // No restart: the same processes, and every session still allowed carries on.
    CHECK(
        daemon.log().find("[shared] only settings mcpd applies itself changed (allow_users, "
                          "allow_groups, filters, request_log, replay): applied without a "
                          "restart") !=
        std::string::npos);
    CHECK(env.server_pid("shared") == shared_pid);
    CHECK(env.server_pid("other") == other_pid);
    CHECK(echo(root, "root stays") == "root stays");
    CHECK(echo(kept->session(), "user stays on other") == "user stays on other");
    CHECK(env.server("shared")["restarts"] == 0);

    // And the user can no longer attach to it.
    const auto again = connect_as(user, env, "shared", "again.err");
    CHECK(again->wait_exit(10s) == 1);
}

TEST_CASE("an allow-only edit keeps the process and lets a new user in", "[reload][access]") {
    const OtherUser user;
    TestEnv env("allow-only");
    env.write_registry(kOpenSocket + server_toml("demo"));
    open_directory(env.dir());
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t pid = *env.server_pid("demo");
    McpSession root(env.socket(), "demo");
    root.initialize("root-agent");

    env.write_registry(kOpenSocket + server_toml("demo", {}, {{"allow_users", allow(user)}}));
    const RunResult reload = env.ctl({"reload"});
    INFO(reload.describe());
    REQUIRE(reload.exit_code == 0);
    CHECK(reload.out.find("changed: demo\n") != std::string::npos);
    CHECK(daemon.log().find("1 only in settings applied without a restart, kept running") !=
          std::string::npos);

    const auto joined = connect_as(user, env, "demo", "joined.err");
    joined->session().initialize("new-agent");
    CHECK(echo(joined->session(), "let in") == "let in");
    CHECK(echo(root, "undisturbed") == "undisturbed");
    CHECK(env.server_pid("demo") == pid);
    CHECK(env.server("demo")["last_exit"].is_null());

    // A change the process sees still restarts it (and ends nobody's session).
    env.write_registry(kOpenSocket + server_toml("demo", {"--stderr-banner=second"},
                                                 {{"allow_users", allow(user)}}));
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    wait_until("demo runs a new process", 10s, [&] {
        const std::optional<pid_t> now = env.server_pid("demo");
        return now && *now != pid && env.state("demo") == "running";
    });
    CHECK(echo(joined->session(), "after restart") == "after restart");
}

TEST_CASE("a user removed from every allow list loses its control connections",
          "[reload][access]") {
    const OtherUser user;
    TestEnv env("revoke-all");
    env.write_registry(kOpenSocket + server_toml("demo", {}, {{"allow_users", allow(user)}}));
    open_directory(env.dir());
    env.start_daemon();
    env.wait_state("demo", "running");

    BackgroundProcess follow(
        user.command({bin("mcpctl"), "--socket", env.socket(), "logs", "-f", "demo"}));
    REQUIRE(follow.wait_for_output("ready", 10s));

    env.write_registry(kOpenSocket + server_toml("demo"));
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    INFO(follow.output());
    CHECK(follow.wait_for_output("may no longer use this mcpd", 10s));
    CHECK(env.daemon().log().find("closing the control connection of pid") != std::string::npos);
}
