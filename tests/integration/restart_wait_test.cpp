// Requests sent while `mcpctl restart` is still stopping the old process wait for the new one
// (docs/MULTIPLEXING.md, "Restarts with sessions attached"), instead of being given to a
// process that will never answer them.
#include <catch2/catch.hpp>
#include <string>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

TEST_CASE("a request sent while a restart stops the server is answered by the new process",
          "[restart]") {
    TestEnv env("restart-wait");
    // It ignores the end of its stdin, so the stop sequence lasts until SIGTERM, stop_grace on.
    env.write_registry(server_toml("slowstop", {"--stdin-eof=ignore", "--tick-ms=0"},
                                   {{"stop_grace", "\"1500ms\""}}));
    env.start_daemon();
    env.wait_state("slowstop", "running");
    McpSession session(env.socket(), "slowstop");
    session.initialize("agent");
    const auto old_pid = env.server_pid("slowstop");
    REQUIRE(old_pid);

    const RunResult restart = env.ctl({"restart", "slowstop"});
    REQUIRE(restart.exit_code == 0);
    env.wait_state("slowstop", "stopping", 5s);
    const json during = session.call_tool("echo", {{"text", "during the stop"}});
    const json listed = session.request("tools/list");

    const McpMessage reply = session.wait_response(during, 20s);
    INFO(reply.raw);
    CHECK_FALSE(reply.is_error());
    CHECK(reply.tool_text() == "during the stop");
    CHECK_FALSE(session.wait_response(listed).is_error());
    const auto new_pid = env.server_pid("slowstop");
    CHECK(new_pid);
    CHECK(new_pid != old_pid);
    CHECK(env.server("slowstop")["last_exit"]["reason"] == "restart");
}
