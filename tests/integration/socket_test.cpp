// The control socket: one daemon per socket, stale sockets, and peer credentials.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "harness.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr const char* kNobody = "65534";

// mcpctl ARGS... run as uid/gid 65534 with no supplementary groups.
RunResult ctl_as_nobody(const std::string& setpriv, const TestEnv& env,
                        const std::vector<std::string>& args) {
    std::vector<std::string> argv{setpriv,
                                  std::string("--reuid=") + kNobody,
                                  std::string("--regid=") + kNobody,
                                  "--clear-groups",
                                  bin("mcpctl"),
                                  "--socket",
                                  env.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv);
}

std::string find_setpriv() {
    for (const char* candidate : {"/usr/bin/setpriv", "/bin/setpriv"}) {
        if (::access(candidate, X_OK) == 0) return candidate;
    }
    return {};
}

}  // namespace

TEST_CASE("a second mcpd on the same socket is refused", "[socket]") {
    TestEnv env("second-daemon");
    env.write_registry(server_toml("demo"));
    DaemonProcess& first = env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t demo_pid = *env.server_pid("demo");

    const RunResult second =
        run_process({bin("mcpd"), "--config", env.registry(), "--socket", env.socket()}, 30s);
    INFO(second.describe());
    CHECK(second.exit_code == 1);
    CHECK_FALSE(second.timed_out);
    CHECK(second.err.find("another mcpd is already listening on " + env.socket()) !=
          std::string::npos);

    // The first one is untouched: same pid answering, same server process.
    const RunResult version = env.ctl({"--json", "version"});
    REQUIRE(version.exit_code == 0);
    CHECK(json::parse(version.out)["daemon"]["pid"] == first.pid());
    CHECK(env.server_pid("demo") == demo_pid);
    CHECK(env.marked_processes().size() == 1);
}

TEST_CASE("a stale socket left by a killed mcpd is replaced", "[socket]") {
    TestEnv env("stale-socket");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    env.daemon().kill_hard();
    env.drop_daemon();

    struct stat st {};
    REQUIRE(::lstat(env.socket().c_str(), &st) == 0);
    REQUIRE(S_ISSOCK(st.st_mode));
    const RunResult dead = env.ctl({"status"});
    INFO(dead.describe());
    CHECK(dead.exit_code == 3);
    wait_until("the killed mcpd's server is gone", 10s,
               [&] { return env.marked_processes().empty(); });

    DaemonProcess& next = env.start_daemon();
    env.wait_state("demo", "running");
    CHECK(next.log().find("replacing stale socket") != std::string::npos);
    const RunResult version = env.ctl({"--json", "version"});
    REQUIRE(version.exit_code == 0);
    CHECK(json::parse(version.out)["daemon"]["pid"] == next.pid());
}

TEST_CASE("peers are checked against their uid and allow_users", "[socket]") {
    // Not checked is not passed: without a second uid this test proves nothing.
    if (::geteuid() != 0)
        FAIL("switching to uid 65534 needs root, and this runs as uid " << ::geteuid());
    const std::string setpriv = find_setpriv();
    if (setpriv.empty()) FAIL("setpriv (util-linux) is not installed");
    TestEnv env("peer-uid");
    env.write_registry(server_toml("private") + server_toml("shared"));
    env.start_daemon();
    env.wait_state("private", "running");
    env.wait_state("shared", "running");
    // Let anybody reach the socket, so only mcpd's own check stands in the way.
    std::filesystem::permissions(env.dir(), std::filesystem::perms::all);
    std::filesystem::permissions(env.socket(), std::filesystem::perms::all);

    const RunResult refused = ctl_as_nobody(setpriv, env, {"status"});
    INFO(refused.describe());
    CHECK(refused.exit_code == 1);
    CHECK(refused.err.find("permission denied") != std::string::npos);
    CHECK(refused.out.find("private") == std::string::npos);
    CHECK(env.daemon().log().find("refused a control connection") != std::string::npos);

    env.write_registry(server_toml("private") +
                       server_toml("shared", {}, {{"allow_users", "[\"65534\"]"}}));
    const RunResult reload = env.ctl({"reload"});
    INFO(reload.describe());
    REQUIRE(reload.exit_code == 0);
    CHECK(reload.out.find("changed: shared") != std::string::npos);
    env.wait_state("shared", "running");

    const RunResult listed = ctl_as_nobody(setpriv, env, {"--json", "status"});
    INFO(listed.describe());
    REQUIRE(listed.exit_code == 0);
    const json status = json::parse(listed.out);
    REQUIRE(status["servers"].size() == 1);
    CHECK(status["servers"][0]["name"] == "shared");

    // A server it may not use is one it cannot tell from a server that does not exist.
    const RunResult other = ctl_as_nobody(setpriv, env, {"stop", "private"});
    INFO(other.describe());
    CHECK(other.exit_code == 1);
    CHECK(other.err.find("no server named 'private' that you may use") != std::string::npos);
    const RunResult reload_denied = ctl_as_nobody(setpriv, env, {"reload"});
    INFO(reload_denied.describe());
    CHECK(reload_denied.exit_code == 1);
    CHECK(reload_denied.err.find("permission denied") != std::string::npos);
    CHECK(env.state("private") == "running");

    const RunResult own = ctl_as_nobody(setpriv, env, {"restart", "--wait", "shared"});
    INFO(own.describe());
    CHECK(own.exit_code == 0);
}
