// sharing = "exclusive": a private process per session, at most max_children at once.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;

TEST_CASE("exclusive sessions get their own process, at most max_children at once", "[exclusive]") {
    TestEnv env("exclusive-cap");
    env.write_registry(server_toml("private", {}, {{"sharing", "\"exclusive\""}, {"max_children", "3"}}));
    env.start_daemon();

    std::vector<std::unique_ptr<McpSession>> sessions;
    for (int i = 0; i < 3; ++i) {
        sessions.push_back(std::make_unique<McpSession>(env.socket(), "private"));
        sessions.back()->initialize("client-" + std::to_string(i));
    }
    wait_until("three private processes", 20s, [&] { return env.marked_processes().size() == 3; });

    // One more is refused with a sentence that names the limit, and starts nothing.
    std::string refusal;
    try {
        McpSession fourth(env.socket(), "private");
    } catch (const std::exception& e) {
        refusal = e.what();
    }
    INFO(refusal);
    CHECK(refusal.find("max_children") != std::string::npos);
    CHECK(refusal.find("3 private processes") != std::string::npos);
    CHECK(env.marked_processes().size() == 3);

    // A session ends: its process goes, and a new session gets one.
    sessions.pop_back();
    wait_until("the ended session's process to stop", 20s,
               [&] { return env.marked_processes().size() == 2; });
    McpSession again(env.socket(), "private");
    again.initialize("again");
    CHECK(again.wait_response(again.call_tool("echo", {{"text", "mine"}})).tool_text() == "mine");
}
