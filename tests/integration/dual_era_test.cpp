// Legacy clients of a dual-era server (era = "auto"): mcpd runs the server in the stateless
// era for modern clients, and serves legacy clients on a second process initialized for them,
// with every legacy rule, while the modern one keeps serving.
#include <catch2/catch.hpp>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

json modern_meta() {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", json::object()}};
}

json legacy_process(const TestEnv& env, const std::string& name) {
    return env.server(name).value("legacy_process", json());
}

// Answer the first server→client request with `method` in `session` with `result`.
void answer_request(McpSession& session, const std::string& method, const json& result) {
    const auto asked = session.wait_for(
        [&](const McpMessage& m) { return m.is_request() && m.method() == method; }, 10s);
    REQUIRE(asked.has_value());
    session.send_line(R"({"jsonrpc":"2.0","id":)" + asked->raw_id() + R"(,"result":)" +
                      result.dump() + "}");
}

}  // namespace

TEST_CASE("a legacy client of a dual-era server gets every legacy rule from a process of its own",
          "[dual-era]") {
    TestEnv env("dual-era");
    env.write_registry(server_toml("dual", {"--era=dual", "--tick-ms=200"}));
    env.start_daemon();

    // A modern client first: the probe makes the shared process modern.
    McpSession modern(env.socket(), "dual");
    const json first = modern.call_tool("echo", {{"text", "modern"}}, modern_meta());
    CHECK(modern.wait_response(first).tool_text() == "modern");
    CHECK(env.daemon_log().find("[dual] ready: protocol 2026-07-28") != std::string::npos);
    const auto modern_pid = env.server_pid("dual");
    REQUIRE(modern_pid.has_value());
    CHECK(legacy_process(env, "dual").is_null());

    McpSession legacy(env.socket(), "dual");
    const McpMessage hello = legacy.initialize("legacy-client", {{"roots", json::object()}});
    INFO(hello.raw);
    CHECK(hello.json["result"]["protocolVersion"] == "2025-06-18");
    CHECK(hello.json["result"]["serverInfo"].contains("name"));
    CHECK(hello.json["result"]["capabilities"].contains("tools"));
    CHECK(hello.json["result"]["capabilities"].contains("logging"));

    // A process of its own, initialized with the handshake; the modern one untouched.
    const json own = legacy_process(env, "dual");
    INFO("status: " << env.server("dual").dump());
    REQUIRE(own.is_object());
    CHECK(own["state"] == "running");
    CHECK(own["sessions"] == 1);
    CHECK(own["pid"] != json(*modern_pid));
    CHECK(env.server_pid("dual") == modern_pid);
    CHECK(env.daemon_log().find("[dual] ready: protocol 2025-") != std::string::npos);

    SECTION("requests without _meta are served") {
        const json id = legacy.call_tool("echo", {{"text", "legacy"}});
        CHECK(legacy.wait_response(id).tool_text() == "legacy");
    }
    SECTION("logging/setLevel filters what the server logs") {
        const json level = legacy.request("logging/setLevel", {{"level", "warning"}});
        CHECK_FALSE(legacy.wait_response(level).is_error());
        const json quiet = legacy.call_tool("log", {{"level", "info"}, {"message", "below"}});
        legacy.wait_response(quiet);
        const json loud = legacy.call_tool("log", {{"level", "error"}, {"message", "above"}});
        legacy.wait_response(loud);
        legacy.pump(300ms);
        const auto messages = legacy.take_notifications("notifications/message");
        REQUIRE(messages.size() == 1);
        CHECK(messages[0].json["params"]["level"] == "error");
    }
    SECTION("resources/subscribe brings notifications/resources/updated") {
        const json sub = legacy.request("resources/subscribe", {{"uri", "demo://counter"}});
        CHECK_FALSE(legacy.wait_response(sub).is_error());
        const auto updated = legacy.wait_for(
            [](const McpMessage& m) { return m.method() == "notifications/resources/updated"; }, 5s);
        REQUIRE(updated.has_value());
        CHECK(updated->json["params"]["uri"] == "demo://counter");
    }
    SECTION("the server's requests reach the client and its answer comes back") {
        const json id = legacy.call_tool("roots", json::object());
        answer_request(legacy, "roots/list", {{"roots", {{{"uri", "file:///legacy/root"}}}}});
        CHECK(legacy.wait_response(id).tool_text() == "file:///legacy/root");
    }
    SECTION("a restart brings list_changed, as for any legacy server") {
        const auto before = own["pid"];
        const RunResult restarted = env.ctl({"restart", "--wait", "dual"});
        REQUIRE(restarted.exit_code == 0);
        REQUIRE(poll_until(10s, [&] {
            const json now = legacy_process(env, "dual");
            return now.is_object() && now["state"] == "running" && now["pid"] != before;
        }));
        const auto changed = legacy.wait_for(
            [](const McpMessage& m) { return m.method() == "notifications/tools/list_changed"; },
            10s);
        CHECK(changed.has_value());
        const json id = legacy.call_tool("echo", {{"text", "again"}});
        CHECK(legacy.wait_response(id).tool_text() == "again");
    }

    // The modern client was served all along, on its own process.
    const json later = modern.call_tool("echo", {{"text", "still"}}, modern_meta());
    CHECK(modern.wait_response(later).tool_text() == "still");
}

TEST_CASE("legacy clients share the legacy process, which stops when the last one leaves",
          "[dual-era]") {
    TestEnv env("dual-era-share");
    env.write_registry(server_toml("dual", {"--era=dual"}));
    env.start_daemon();
    McpSession modern(env.socket(), "dual");
    const json first = modern.call_tool("echo", {{"text", "modern"}}, modern_meta());
    CHECK(modern.wait_response(first).tool_text() == "modern");

    auto a = std::make_unique<McpSession>(env.socket(), "dual");
    auto b = std::make_unique<McpSession>(env.socket(), "dual");
    a->initialize("legacy-a");
    b->initialize("legacy-b");
    json own = legacy_process(env, "dual");
    INFO("status: " << env.server("dual").dump());
    REQUIRE(own.is_object());
    CHECK(own["sessions"] == 2);
    const pid_t pid = own["pid"].get<pid_t>();

    a.reset();
    REQUIRE(poll_until(5s, [&] { return legacy_process(env, "dual")["sessions"] == 1; }));
    b.reset();
    REQUIRE(poll_until(10s, [&] { return legacy_process(env, "dual").is_null(); }));
    REQUIRE(poll_until(10s, [&] { return ::kill(pid, 0) != 0; }));
    CHECK(env.daemon_log().find("the last legacy client left") != std::string::npos);

    // The modern process never noticed.
    const json later = modern.call_tool("echo", {{"text", "still"}}, modern_meta());
    CHECK(modern.wait_response(later).tool_text() == "still");
    CHECK(env.server("dual")["restarts"] == 0);
}

TEST_CASE("a legacy client of a server pinned to era = \"modern\" gets a clear error",
          "[dual-era]") {
    TestEnv env("dual-era-pinned");
    env.write_registry(server_toml("modern", {"--era=dual"}, {{"era", "\"modern\""}}));
    env.start_daemon();
    McpSession legacy(env.socket(), "modern");
    const json id = legacy.request(
        "initialize", {{"protocolVersion", "2025-06-18"},
                       {"capabilities", json::object()},
                       {"clientInfo", {{"name", "legacy"}, {"version", "1"}}}});
    const McpMessage reply = legacy.wait_response(id);
    INFO(reply.raw);
    CHECK(reply.error_code() == -32600);
    CHECK(reply.json["error"]["message"].get<std::string>().find("era = \"legacy\"") !=
          std::string::npos);
    CHECK(legacy_process(env, "modern").is_null());
}

TEST_CASE("a legacy client of an exclusive dual-era server gets a private legacy process",
          "[dual-era]") {
    TestEnv env("dual-era-exclusive");
    env.write_registry(server_toml("own", {"--era=dual"}, {{"sharing", "\"exclusive\""}}));
    env.start_daemon();
    McpSession legacy(env.socket(), "own");
    const McpMessage hello = legacy.initialize("legacy-client");
    INFO(hello.raw);
    CHECK(hello.json["result"]["capabilities"].contains("tools"));
    const json id = legacy.call_tool("echo", {{"text", "mine"}});
    CHECK(legacy.wait_response(id).tool_text() == "mine");
    // The private process the probe made modern is stopped: one process serves the session.
    CHECK(poll_until(10s, [&] { return env.marked_processes().size() == 1; }));
    INFO("processes: " << env.marked_processes().size());
    CHECK(env.marked_processes().size() == 1);
}
