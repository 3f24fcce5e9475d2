// The daemon's own output: it never blocks the loop (stderr a pipe nobody reads), and a
// server flooding its stderr does not flood the daemon log.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;

namespace {

// mcpd with stdout and stderr on a pipe that the test holds and never reads.
class UnreadDaemon {
public:
    UnreadDaemon(const TestEnv& env) {
        REQUIRE(::pipe2(pipe_, O_CLOEXEC) == 0);
        const std::vector<std::string> environment = child_environment();
        std::vector<char*> envp;
        for (const std::string& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
        envp.push_back(nullptr);
        const std::string mcpd = bin("mcpd");
        const char* argv[] = {mcpd.c_str(), "--config", env.registry().c_str(), "--socket",
                              env.socket().c_str(), nullptr};
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::dup2(pipe_[1], STDOUT_FILENO);
            ::dup2(pipe_[1], STDERR_FILENO);
            ::execve(mcpd.c_str(), const_cast<char* const*>(argv), envp.data());
            _exit(127);
        }
        ::close(pipe_[1]);
    }
    ~UnreadDaemon() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        ::close(pipe_[0]);
    }
    pid_t pid() const { return pid_; }

private:
    int pipe_[2];
    pid_t pid_;
};

}  // namespace

TEST_CASE("mcpd keeps serving when nobody reads its stderr", "[log]") {
    TestEnv env("log-unread-stderr");
    env.write_registry(server_toml("demo"));
    UnreadDaemon daemon(env);
    wait_until("mcpd answers", 20s, [&] { return env.ctl({"version"}, 5s).exit_code == 0; });
    env.wait_state("demo", "running");

    // Far more than the pipe holds (64 KiB) goes to the daemon log.
    McpSession session(env.socket(), "demo");
    session.initialize("flooder");
    const McpMessage flooded = session.wait_response(
        session.call_tool("stderr", {{"lines", 20000}, {"text", std::string(200, 'e')}}), 60s);
    CHECK(flooded.is_response());
    for (int i = 0; i < 5; ++i) {
        const RunResult status = env.ctl({"status"}, 5s);
        INFO(status.describe());
        CHECK(status.exit_code == 0);
        CHECK(status.took < 1s);
        CHECK(session.wait_response(session.call_tool("echo", {{"text", "still here"}}), 5s)
                  .tool_text() == "still here");
    }
}

TEST_CASE("a server's stderr flood adds little to the daemon log", "[log]") {
    TestEnv env("log-flood");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    struct stat before {};
    REQUIRE(::stat(env.daemon().log_path().c_str(), &before) == 0);

    // 200,000 lines of 1 KB: 200 MB of stderr.
    McpSession session(env.socket(), "demo");
    session.initialize("flooder");
    const auto started = Clock::now();
    const McpMessage done = session.wait_response(
        session.call_tool("stderr", {{"lines", 200000}, {"text", std::string(1000, 'f')}}), 120s);
    CHECK(done.is_response());
    // The ring `mcpctl logs` reads has the newest lines.
    wait_until("the last line in mcpctl logs", 60s, [&] {
        return env.ctl({"logs", "-n", "1", "demo"}).out.find(" 200000") != std::string::npos;
    });
    const long long took_ms = ms_since(started);
    struct stat after {};
    REQUIRE(::stat(env.daemon().log_path().c_str(), &after) == 0);
    const long long added = after.st_size - before.st_size;
    // At most the burst (1,000 lines) plus 200 lines a second, each at most 4 KiB cut:
    // documented in mcpd(8).
    const long long bound = (1000 + 200 * (took_ms / 1000 + 2)) * 4200LL;
    WARN("200 MB of stderr in " << took_ms << " ms added " << added << " bytes to the daemon log");
    CHECK(added < bound);
    CHECK(env.daemon().log().find("log lines were not written (more than 200 a second") !=
          std::string::npos);
}
