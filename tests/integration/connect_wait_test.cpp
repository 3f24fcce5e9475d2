// Once mcpd holds the agent's pipes, `mcpctl connect` becomes the small mcpctl-wait program,
// which still ends with the session and reports why, as mcpctl itself would.
#include <catch2/catch.hpp>
#include <thread>

#include "harness.h"
#include "proc_fs.h"

using namespace integration;

namespace {

// Pids whose command line is "mcpctl-wait FD SOCKET" for this socket. Read with proc_fs, which
// copes with a process that exits while it is read (a shell of the agent's pipeline may).
std::vector<pid_t> waiting_bridges(const std::string& socket) {
    std::vector<pid_t> pids;
    for (pid_t pid : all_processes()) {
        const std::string cmdline = process_cmdline(pid);
        if (cmdline.find("mcpctl-wait") == std::string::npos) continue;
        if (cmdline.find('\0' + socket + '\0') == std::string::npos) continue;
        pids.push_back(pid);
    }
    return pids;
}

}  // namespace

TEST_CASE("a passing mcpctl connect waits as mcpctl-wait and exits 1 with mcpd's reason",
          "[session]") {
    TestEnv env("connect-wait");
    env.write_registry(server_toml("demo") + "\n" + server_toml("other"));
    env.start_daemon();

    // Pipes on both ends, as an agent gives: mcpctl passes them to mcpd. mcpctl's exit status
    // is printed as soon as it exits; then the sleep feeding it goes.
    BackgroundProcess agent({"/bin/sh", "-c",
                             "sleep 120 | { " + bin("mcpctl") + " --socket " + env.socket() +
                                 " connect demo; echo \"connect exit $?\" >&2; pkill -P $$ -x sleep; } | cat >/dev/null"});
    std::vector<pid_t> bridges;
    const auto deadline = Clock::now() + 20s;
    while (bridges.empty() && Clock::now() < deadline) {
        std::this_thread::sleep_for(20ms);
        bridges = waiting_bridges(env.socket());
    }
    REQUIRE(bridges.size() == 1);
    CHECK(env.server("demo")["sessions"] == 1);

    // The session ends on mcpd's side: the server leaves the registry (with every other
    // server it had, which a reload does only when asked to).
    env.write_registry(server_toml("other"));
    REQUIRE(env.ctl({"reload", "--allow-remove-all"}).exit_code == 0);
    INFO(agent.output());
    REQUIRE(agent.wait_for_output("connect exit", 20s));
    CHECK(agent.output().find("mcpctl: the session ended: the server was removed from the registry") !=
          std::string::npos);
    CHECK(agent.output().find("connect exit 1") != std::string::npos);
}
