// allow_users with a socket the user cannot reach: mcpd names the user and what to set at
// start, at every reload and from --check-config; with socket_group the user gets in and
// nothing is said.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "harness.h"
#include "other_user.h"
#include "system_account.h"

using namespace integration;

namespace {

const std::string kUnreachable = "cannot reach the socket";

std::string allowing(const SystemAccount& user) {
    return server_toml("demo", {}, {{"allow_users", "[\"" + user.name() + "\"]"}});
}

RunResult check_config(const TestEnv& env) {
    return run_process({bin("mcpd"), "--check-config", env.registry(), "--socket", env.socket()});
}

RunResult status_as(const SystemAccount& user, const TestEnv& env) {
    return run_process(user.command({bin("mcpctl"), "--socket", env.socket(), "status"}), 30s);
}

}  // namespace

TEST_CASE("allowed users who cannot reach the socket are named at start, reload and check",
          "[socket][access]") {
    const SystemAccount bob;
    TestEnv env("reach-private");
    // Default socket mode (0600) in a directory everybody may search: only the socket's mode
    // keeps bob out.
    env.write_registry(allowing(bob));
    open_directory(env.dir());

    const RunResult check = check_config(env);
    INFO(check.describe());
    CHECK(check.exit_code == 0);
    CHECK(check.err.find("warning: allow_users/allow_groups let in users who " + kUnreachable +
                         " " + env.socket()) != std::string::npos);
    CHECK(check.err.find("(" + bob.name() + ") (demo) cannot write to the socket (mode 0600") !=
          std::string::npos);
    CHECK(check.err.find("socket_group") != std::string::npos);

    DaemonProcess& daemon = env.start_daemon();
    CHECK(count_of(daemon.log(), kUnreachable) == 1);
    CHECK(daemon.log().find(bob.name()) != std::string::npos);
    // It is right: bob is refused by the file system, before mcpd could check him.
    const RunResult refused = status_as(bob, env);
    INFO(refused.describe());
    CHECK(refused.exit_code != 0);
    CHECK(refused.err.find("Permission denied") != std::string::npos);

    // Said again, once, at every reload.
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    CHECK(count_of(daemon.log(), kUnreachable) == 2);
}

TEST_CASE("with socket_group set, an allowed user reaches the socket and nothing is said",
          "[socket][access]") {
    const SystemAccount bob;
    TestEnv env("reach-group");
    env.write_registry("[daemon]\nsocket_group = \"" + bob.name() + "\"\n\n" + allowing(bob));
    open_directory(env.dir());

    const RunResult check = check_config(env);
    INFO(check.describe());
    CHECK(check.exit_code == 0);
    CHECK(check.err.find(kUnreachable) == std::string::npos);

    DaemonProcess& daemon = env.start_daemon();
    const RunResult status = status_as(bob, env);
    INFO(status.describe());
    CHECK(status.exit_code == 0);
    CHECK(status.out.find("demo") != std::string::npos);
    REQUIRE(env.ctl({"reload"}).exit_code == 0);
    CHECK(daemon.log().find(kUnreachable) == std::string::npos);
}

TEST_CASE("a socket directory an allowed group cannot search is named too", "[socket][access]") {
    const SystemAccount bob;
    TestEnv env("reach-directory");
    // The socket would let the group in, but the directory (0700) does not.
    env.write_registry("[daemon]\nsocket_group = \"" + bob.name() + "\"\n\n" +
                       server_toml("demo", {}, {{"allow_groups", "[\"" + bob.name() + "\"]"}}));
    REQUIRE(::chmod(env.dir().c_str(), 0700) == 0);

    const RunResult check = check_config(env);
    INFO(check.describe());
    CHECK(check.exit_code == 0);
    CHECK(check.err.find("the members of group " + std::to_string(bob.gid()) + " (" + bob.name() +
                         ") (demo) cannot search " + env.dir() + " (mode 0700") !=
          std::string::npos);
    CHECK(check.err.find("[daemon] socket to a path in a directory they can search") !=
          std::string::npos);
}
