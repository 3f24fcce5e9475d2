// Fault: servers that break the stdio protocol with sessions attached: one closes stdout and
// keeps running, one never answers initialize, one answers ids it was never sent, one cannot
// read a line it was sent. Sessions get an answer to every request and stay attached; nothing
// a server invents reaches them.
#include <catch2/catch.hpp>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

// An echo call from `session` that must come back intact.
void expect_echo(McpSession& session, const std::string& text, Duration timeout = 30s) {
    INFO(session.label() << " echoes " << text);
    CHECK(session.wait_response(session.call_tool("echo", {{"text", text}}), timeout).tool_text() ==
          text);
}

}  // namespace

TEST_CASE(
    "a server that closes stdout but keeps running is killed and replaced and its "
    "sessions carry on",
    "[fault]") {
    const auto started = Clock::now();
    TestEnv env("fault-stdout-closed");
    // Deaf to stdin EOF and SIGTERM: only the last step of the stop ladder ends it.
    env.write_registry(
        server_toml("demo", {"--fault-tools", "--stdin-eof=ignore", "--ignore-sigterm"}));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t first = *env.server_pid("demo");
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo");
    a.initialize("waiting");
    b.initialize("closer");

    const json slow =
        a.call_tool("slow", {{"steps", 1000}, {"interval_ms", 50}}, {{"progressToken", 1}});
    REQUIRE(a.wait_for([](const McpMessage& m) { return m.method() == "notifications/progress"; },
                       10s));
    const json closing = b.call_tool("close_stdout", json::object());

    // Both calls were at a process that can no longer answer: each gets an error.
    for (auto [session, id] : {std::pair{&a, slow}, std::pair{&b, closing}}) {
        const McpMessage reply = session->wait_response(id, 30s);
        INFO(session->label() << ": " << reply.raw);
        CHECK(reply.error_code() == -32603);
    }
    wait_until("the old process is gone", 20s, [&] { return !process_alive(first); });
    env.wait_state("demo", "running");
    const json demo = env.server("demo");
    INFO(demo.dump());
    CHECK(demo["pid"] != first);
    REQUIRE(demo["last_exit"].is_object());
    CHECK(demo["last_exit"]["reason"] == "stdout-closed");
    CHECK(demo["last_exit"]["step"] == "kill");  // it kept running through stdin EOF and SIGTERM
    CHECK_FALSE(a.at_eof());
    CHECK_FALSE(b.at_eof());
    expect_echo(a, "after stdout closed");
    expect_echo(b, "after stdout closed");
    CHECK(env.marked_processes().size() == 1);
    WARN("the stdout-closed test took " << ms_since(started) << " ms");
}

TEST_CASE(
    "requests to a server that never answers initialize fail at start_timeout and the "
    "session stays",
    "[fault]") {
    TestEnv env("fault-mute-initialize");
    env.write_registry(server_toml(
        "mute", {"--no-initialize-reply"},
        {{"start_timeout", "\"500ms\""}, {"start_limit", "{ burst = 1, interval = \"60s\" }"}}));
    env.start_daemon();
    McpSession session(env.socket(), "mute");

    // The session's own initialize waits for the server, then fails: the server was never ready.
    const json init =
        session.request("initialize", {{"protocolVersion", "2025-06-18"},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "patient"}, {"version", "1"}}}});
    const McpMessage refused = session.wait_response(init, 20s);
    INFO(refused.raw);
    CHECK(refused.error_code() == -32603);

    env.wait_state("mute", "failed", 20s);
    CHECK_FALSE(session.at_eof());
    // Once the server has failed, a request still gets its answer (start_timeout at most).
    const json again =
        session.request("initialize", {{"protocolVersion", "2025-06-18"},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "patient"}, {"version", "1"}}}});
    const McpMessage unavailable = session.wait_response(again, 20s);
    INFO(unavailable.raw);
    CHECK(unavailable.error_code() == -32603);
    CHECK_FALSE(session.at_eof());
    const json listing = json::parse(env.ctl({"--json", "sessions"}).out);
    CHECK(listing["sessions"].size() == 1);
}

TEST_CASE("answers to ids the server was never sent are dropped and logged", "[fault]") {
    TestEnv env("fault-stray-replies");
    env.write_registry(server_toml("demo", {"--fault-tools"}));
    env.start_daemon();
    env.wait_state("demo", "running");
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo");
    a.initialize("asker");
    b.initialize("bystander");
    // b has a call in flight too, so a stray answer could be mistaken for its own.
    const json pending =
        b.call_tool("slow", {{"steps", 10}, {"interval_ms", 50}}, {{"progressToken", "b"}});

    constexpr int kStrays = 6;
    const json id = a.call_tool("stray_replies", {{"count", kStrays}});
    CHECK(a.wait_response(id).tool_text() == "sent 6 stray replies");
    CHECK(b.wait_response(pending).tool_text() == "done after 10 steps");
    expect_echo(a, "after the strays");
    expect_echo(b, "after the strays");
    a.pump(300ms);
    b.pump(0ms);
    INFO("a's inbox:\n" << a.describe_inbox() << "b's inbox:\n" << b.describe_inbox());
    CHECK(a.responses().empty());  // neither the strays nor the second answer
    CHECK(b.responses().empty());

    // Six strays and the duplicate answer: the first is written, the other six counted and
    // the count said once the 10 s window has passed.
    wait_until("mcpd has said how many stray answers it dropped", 20s, [&] {
        return env.daemon().log().find("dropped a response with an id mcpd never sent: 6 more in "
                                       "the last 10 s") != std::string::npos;
    });
    CHECK(count_of(env.daemon().log(), "dropped a response with an id mcpd never sent") == 2);
    CHECK(env.state("demo") == "running");
}

TEST_CASE("a server's parse error with id null fails the one request it could not read",
          "[fault]") {
    // The demo server reads lines with a parser that refuses a lone surrogate, which mcpd
    // forwards as it came, and answers {"id":null,"error":{"code":-32700,...}}.
    TestEnv env("fault-null-id");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession s(env.socket(), "demo");
    s.initialize("surrogate");
    REQUIRE(s.send_line(
        R"({"jsonrpc":"2.0","id":"cut","method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud83d"}}})"));
    const McpMessage reply = s.wait_response("cut", 10s);
    INFO(reply.raw);
    CHECK(reply.error_code() == -32700);
    CHECK(reply.raw_id() == R"("cut")");
    wait_until("mcpd logged the id-null error with the line's start", 10s, [&] {
        return env.daemon_log().find(R"(the line begins {"jsonrpc":"2.0","id":null)") !=
               std::string::npos;
    });
    expect_echo(s, "after the parse error");
}
