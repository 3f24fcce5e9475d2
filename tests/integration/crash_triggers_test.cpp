// Messages that used to end mcpd (an uncaught type error): each is sent while another session
// has a call in flight. The call completes, the sender gets an answer, and mcpd's pid is
// unchanged.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"
#include "raw_client.h"

using namespace integration;
using nlohmann::json;

namespace {

// A session with a slow call in flight; `finish` checks that it completes.
struct BusySession {
    explicit BusySession(const TestEnv& env) : session(env.socket(), "demo") {
        session.initialize("busy-client");
        id = session.call_tool("slow", {{"steps", 10}, {"interval_ms", 100}});
    }
    void finish() {
        const McpMessage reply = session.wait_response(id, 30s);
        INFO(reply.raw);
        CHECK(reply.tool_text() == "done after 10 steps");
    }
    McpSession session;
    json id;
};

}  // namespace

TEST_CASE("session messages of the wrong types are answered and mcpd lives on", "[crash]") {
    TestEnv env("crash-session");
    env.write_registry(server_toml("demo"));
    const pid_t pid = env.start_daemon().pid();
    env.wait_state("demo", "running");

    const std::vector<std::string> triggers{
        // The issue's reproduction: protocolVersion as a number.
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":20251125,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}})",
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":5,"version":["1"]}}})",
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":null,"capabilities":[],"clientInfo":"x"}})",
    };
    for (const std::string& trigger : triggers) {
        INFO(trigger);
        BusySession busy(env);
        McpSession attacker(env.socket(), "demo");
        REQUIRE(attacker.send_line(trigger));
        const McpMessage answer = attacker.wait_response(1, 10s);
        CHECK(answer.is_response());
        busy.finish();
        CHECK(env.daemon_pid() == pid);
        CHECK_FALSE(env.daemon().poll_exit());
    }
}

TEST_CASE("control requests with fields of the wrong types are refused and mcpd lives on", "[crash]") {
    TestEnv env("crash-control");
    env.write_registry(server_toml("demo"));
    const pid_t pid = env.start_daemon().pid();
    env.wait_state("demo", "running");
    const pid_t demo = *env.server_pid("demo");

    struct Trigger {
        std::string line;
        std::string field;
    };
    const std::vector<Trigger> triggers{
        {R"({"protocol":1,"command":"logs","server":"demo","follow":"x"})", "\"follow\" must be true or false, not a string"},
        {R"({"protocol":1,"command":"attach","server":"demo","pass_fds":1})", "\"pass_fds\" must be true or false, not an integer"},
        {R"({"protocol":1,"command":"restart","servers":["demo"],"wait":1})", "\"wait\" must be true or false, not an integer"},
        {R"({"protocol":1,"command":"restart","servers":["demo"],"wait":true,"timeout_ms":"5"})", "\"timeout_ms\" must be a whole number"},
        {R"({"protocol":1,"command":"logs","server":"demo","lines":-1})", "\"lines\" must be a whole number from 0 to 1000000, not -1"},
    };
    for (const Trigger& trigger : triggers) {
        INFO(trigger.line);
        BusySession busy(env);
        RawClient client(env.socket());
        client.send(trigger.line + "\n");
        const std::optional<std::string> reply = client.read_line();
        REQUIRE(reply);
        const json answer = json::parse(*reply);
        CHECK(answer["ok"] == false);
        CHECK(answer["error"]["code"] == "bad_request");
        CHECK(answer["error"]["message"].get<std::string>().find(trigger.field) != std::string::npos);
        busy.finish();
        CHECK(env.daemon_pid() == pid);
        CHECK_FALSE(env.daemon().poll_exit());
    }
    // A refused restart restarted nothing.
    CHECK(env.server_pid("demo") == demo);
}
