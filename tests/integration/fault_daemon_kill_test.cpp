// Fault: mcpd itself is killed with SIGKILL while sessions keep its servers busy. No server
// process and none of their descendants in the server's process group may survive it (the
// keeper kills the groups), and the next mcpd starts cleanly on the same socket.
#include <poll.h>

#include <catch2/catch.hpp>
#include <csignal>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

// The server whose real MCP process is a grandchild of mcpd, next to a sleeping sibling, all
// in the process group of the shell mcpd started. The demo server ignores stdin EOF and
// SIGTERM, so nothing but a SIGKILL to the group ends it once mcpd is gone. (A background
// command of a non-interactive shell gets /dev/null as stdin unless it redirects its own,
// hence fd 3.)
const std::string kFamilyScript =
    "sleep 300 & exec 3<&0; mcpd-demo-server --stdin-eof=ignore --ignore-sigterm <&3 3<&- & "
    "wait";

// mcpd's keeper: its child named mcpd-keeper.
std::optional<pid_t> keeper_of(pid_t mcpd) {
    for (pid_t child : children_of(mcpd)) {
        if (process_name(child) == "mcpd-keeper" && process_alive(child)) return child;
    }
    return std::nullopt;
}

// Keep `sessions` busy with pipelined echo calls for `duration`, reading what comes back.
void keep_busy(std::vector<std::unique_ptr<McpSession>>& sessions, Duration duration) {
    const auto until = Clock::now() + duration;
    int n = 0;
    std::vector<pollfd> fds(sessions.size());
    while (Clock::now() < until) {
        for (std::size_t i = 0; i < sessions.size(); ++i) {
            McpSession& s = *sessions[i];
            if (!s.output_waiting()) {
                for (int k = 0; k < 8; ++k)
                    s.queue(request_line(std::to_string(++n), "tools/call",
                                         {{"name", "echo"}, {"arguments", {{"text", "busy"}}}}));
            }
            const bool writing = s.flush();
            fds[i] = pollfd{s.read_fd(), short(POLLIN | (writing ? POLLOUT : 0)), 0};
        }
        ::poll(fds.data(), fds.size(), 20);
        for (std::size_t i = 0; i < sessions.size(); ++i)
            sessions[i]->read_available([](McpMessage&&) {});
    }
}

}  // namespace

TEST_CASE("SIGKILL of mcpd under load leaves no server or grandchild and a reusable socket",
          "[fault]") {
    const auto started = Clock::now();
    TestEnv env("fault-daemon-kill");
    env.write_registry(server_toml("family", {"-c", kFamilyScript}, {}, "sh") +
                       server_toml("plain", {"--stdin-eof=ignore", "--ignore-sigterm"}));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("family", "running");
    env.wait_state("plain", "running");

    wait_until("the shell, its sleep and its demo server run, and the plain server", 20s, [&] {
        const std::vector<pid_t> marked = env.marked_processes();
        return named(marked, "sh").size() == 1 && named(marked, "sleep").size() == 1 &&
               named(marked, "mcpd-demo-serve").size() == 2;
    });
    const std::vector<pid_t> doomed = env.marked_processes();
    const std::optional<pid_t> keeper = keeper_of(daemon.pid());
    INFO("processes of the servers: " << describe_processes(doomed));
    REQUIRE(doomed.size() == 4);
    CHECK(keeper);

    std::vector<std::unique_ptr<McpSession>> sessions;
    for (int i = 0; i < 8; ++i) {
        sessions.push_back(std::make_unique<McpSession>(env.socket(), i % 2 ? "family" : "plain"));
        sessions.back()->initialize("busy-" + std::to_string(i));
    }
    keep_busy(sessions, 500ms);

    CHECK(daemon.kill_hard() == -SIGKILL);
    const auto killed = Clock::now();
    wait_until("no process of the killed mcpd's servers is left", 20s,
               [&] { return env.marked_processes().empty(); });
    WARN("every server process and grandchild was gone " << ms_since(killed)
                                                         << " ms after SIGKILL to mcpd");
    if (keeper) wait_until("the keeper has exited", 20s, [&] { return !process_alive(*keeper); });
    for (auto& session : sessions) CHECK(session->wait_closed(10s));
    env.drop_daemon();

    // The next mcpd replaces the stale socket and brings both servers back.
    DaemonProcess& next = env.start_daemon();
    env.wait_state("family", "running");
    env.wait_state("plain", "running");
    CHECK(next.log().find("replacing stale socket") != std::string::npos);
    McpSession family(env.socket(), "family");
    family.initialize("after the kill");
    CHECK(family.wait_response(family.call_tool("echo", {{"text", "back"}})).tool_text() == "back");
    const std::optional<pid_t> next_keeper = keeper_of(next.pid());
    CHECK(next_keeper);

    // A normal exit leaves nothing behind either, the keeper included (it has nothing to kill).
    CHECK(next.terminate() == 0);
    wait_until("the servers of the stopped mcpd are gone", 20s,
               [&] { return env.marked_processes().empty(); });
    if (next_keeper) {
        wait_until("the keeper of the stopped mcpd has exited", 20s,
                   [&] { return !process_alive(*next_keeper); });
    }
    env.drop_daemon();
    WARN("SIGKILL of mcpd under load took " << ms_since(started) << " ms in all");
}
