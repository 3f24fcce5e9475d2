// Fault: 100 MiB lines (over max_message_bytes) from a session and from a server, a line that
// fits a raised max_message_bytes, and bytes that are not UTF-8 from either side. The error
// goes to the request it concerns, everyone else carries on, and memory stays bounded.
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>

#include "byte_units.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr std::size_t kDefaultMaxMessage = 16 * kMiB;
constexpr std::size_t kHugeLine = 100 * kMiB;

// An echo call from `session` that must come back intact.
void expect_long_echo(McpSession& session, const std::string& text, Duration timeout = 30s) {
    INFO(session.label() << " echoes " << text.substr(0, 40));
    CHECK(session.wait_response(session.call_tool("echo", {{"text", text}}), timeout).tool_text() ==
          text);
}

// Write `bytes` to the session as they are (no newline added).
void send_bytes(McpSession& session, std::string_view bytes, Duration timeout = 30s) {
    const auto deadline = Clock::now() + timeout;
    while (!bytes.empty()) {
        const ssize_t n = ::send(session.write_fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n > 0) {
            bytes.remove_prefix(static_cast<std::size_t>(n));
            continue;
        }
        if (n >= 0 || (errno != EAGAIN && errno != EINTR))
            FAIL(session.label() << ": sending failed: " << std::strerror(errno));
        if (Clock::now() >= deadline) FAIL(session.label() << ": mcpd stopped reading");
        pollfd pfd{session.write_fd(), POLLOUT, 0};
        ::poll(&pfd, 1, 100);
    }
}

// The next response `session` gets, whatever its id.
McpMessage next_response(McpSession& session, Duration timeout = 60s) {
    auto reply = session.wait_for([](const McpMessage& m) { return m.is_response(); }, timeout);
    INFO(session.label() << " inbox:\n" << session.describe_inbox());
    REQUIRE(reply);
    return std::move(*reply);
}

}  // namespace

TEST_CASE("a 100 MiB line from a session gets an error with its id and nothing else is lost",
          "[fault]") {
    const auto started = Clock::now();
    TestEnv env("fault-huge-session-line");
    env.write_registry(server_toml("demo"));  // max_message_bytes: the default 16 MiB
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t mcpd = env.daemon_pid();
    const pid_t server = *env.server_pid("demo");
    McpSession sender(env.socket(), "demo"), bystander(env.socket(), "demo");
    sender.initialize("sender");
    bystander.initialize("bystander");
    const std::size_t idle_rss = *resident_bytes(mcpd);
    std::size_t peak_rss = idle_rss;

    // A well-formed request, 100 MiB long, sent in pieces; the bystander is served between them.
    const std::string head =
        R"({"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo","arguments":{"text":")";
    send_bytes(sender, head);
    const std::string piece(4 * kMiB, 'x');
    int served = 0;
    for (std::size_t sent = 0; sent < kHugeLine; sent += piece.size()) {
        send_bytes(sender, piece);
        expect_long_echo(bystander, "between pieces " + std::to_string(++served));
        if (const auto rss = resident_bytes(mcpd)) peak_rss = std::max(peak_rss, *rss);
    }
    send_bytes(sender, "\"}}}\n");

    const McpMessage refused = next_response(sender);
    INFO("the reply: " << refused.raw);
    CHECK(refused.error_code() == -32600);
    CHECK(refused.raw_id() == R"("huge")");
    CHECK(refused.json["error"].value("message", "").find("max_message_bytes") !=
          std::string::npos);
    expect_long_echo(sender, "after the huge line");
    expect_long_echo(bystander, "after the huge line");
    sender.pump(200ms);
    CHECK(sender.responses().empty());  // one answer, nothing for the pieces
    CHECK(env.server_pid("demo") == server);
    CHECK(env.daemon().log().find("discarded a message of 104857") != std::string::npos);

    // The line is dropped as it arrives: mcpd holds at most about one limit's worth of it.
    const std::size_t bound = idle_rss + 3 * kDefaultMaxMessage;
    WARN("mcpd RSS: idle " << idle_rss / 1024 << " KiB, peak " << peak_rss / 1024
                           << " KiB while a 100 MiB line went by (bound " << bound / 1024
                           << " KiB)");
    CHECK(peak_rss <= bound);
    WARN("the 100 MiB session line test took " << ms_since(started) << " ms");
}

TEST_CASE("a 100 MiB line from the server fails the call it answers and the server stays",
          "[fault]") {
    const auto started = Clock::now();
    TestEnv env("fault-huge-server-line");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t mcpd = env.daemon_pid();
    const pid_t server = *env.server_pid("demo");
    McpSession asker(env.socket(), "demo"), bystander(env.socket(), "demo");
    asker.initialize("asker");
    bystander.initialize("bystander");
    const std::size_t idle_rss = *resident_bytes(mcpd);

    // The answer is a 100 MiB line; calls before and after it on both sessions are answered.
    const json before = asker.call_tool("echo", {{"text", "before"}});
    const json huge = asker.call_tool("large", {{"bytes", kHugeLine}});
    const json after = asker.call_tool("echo", {{"text", "after"}});
    for (int i = 0; i < 10; ++i) expect_long_echo(bystander, "during " + std::to_string(i));
    CHECK(asker.wait_response(before).tool_text() == "before");
    const McpMessage failed = asker.wait_response(huge, 60s);
    INFO("the reply: " << failed.raw);
    CHECK(failed.error_code() == -32603);
    CHECK(failed.json["error"].value("message", "").find("max_message_bytes") != std::string::npos);
    CHECK(asker.wait_response(after).tool_text() == "after");
    expect_long_echo(asker, "later");
    expect_long_echo(bystander, "later");
    asker.pump(200ms);
    CHECK(asker.responses().empty());
    CHECK(bystander.responses().empty());

    const std::string log = env.daemon().log();
    CHECK(log.find("dropped a message of 10485") != std::string::npos);  // 100 MiB and a bit
    CHECK(env.server_pid("demo") == server);
    const std::size_t peak_rss = *resident_bytes(mcpd);
    WARN("mcpd RSS: idle " << idle_rss / 1024 << " KiB, after the 100 MiB line " << peak_rss / 1024
                           << " KiB");
    CHECK(peak_rss <= idle_rss + 3 * kDefaultMaxMessage);
    WARN("the 100 MiB server line test took " << ms_since(started) << " ms");
}

TEST_CASE("a line over 16 MiB that fits a raised max_message_bytes goes through intact",
          "[fault]") {
    TestEnv env("fault-raised-limit");
    env.write_registry("[daemon]\nmax_message_bytes = 33554432\n\n" + server_toml("demo"));
    env.start_daemon();
    McpSession session(env.socket(), "demo");
    session.initialize("big but allowed");
    std::string text(18 * kMiB, 'a');
    for (std::size_t i = 0; i < text.size(); i += 4096) text[i] = static_cast<char>('b' + i % 23);
    const json id = session.call_tool("echo", {{"text", text}});
    const McpMessage reply = session.wait_response(id, 60s);
    REQUIRE_FALSE(reply.is_error());
    CHECK(reply.tool_text() == text);
    expect_long_echo(session, "and small ones still");
}

TEST_CASE("bytes that are not UTF-8 are refused from a session and from the server", "[fault]") {
    TestEnv env("fault-bad-utf8");
    env.write_registry(server_toml("demo", {"--fault-tools"}));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t server = *env.server_pid("demo");
    McpSession a(env.socket(), "demo"), b(env.socket(), "demo");
    a.initialize("latin-1 client");
    b.initialize("bystander");

    // RFC 8259 section 8.1: JSON exchanged between systems is UTF-8, and MCP's stdio transport
    // says the same; bytes that are not are not JSON. From a session: a parse error (-32700)
    // with a null id, as JSON-RPC prescribes when the request cannot be read. Nothing reaches
    // the server.
    const std::vector<std::string> lines = {
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
        "\"arguments\":{\"text\":\"caf\xe9\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
        "\"arguments\":{\"text\":\"\xc0\xafoverlong\"}}}",
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
        "\"arguments\":{\"text\":\"\xed\xa0\x80surrogate\"}}}",
    };
    for (const std::string& line : lines) {
        REQUIRE(a.send_line(line));
        const McpMessage reply = next_response(a, 10s);
        INFO("reply: " << reply.raw);
        CHECK(reply.error_code() == -32700);
        CHECK(reply.raw_id() == "null");
        expect_long_echo(a, "after bad bytes");
    }

    // From the server: its answer is not JSON either, so it is never forwarded; the call it
    // answers gets an error instead of waiting forever, and the server is not restarted.
    const json id = a.call_tool("bad_utf8", json::object());
    const McpMessage failed = a.wait_response(id, 20s);
    INFO("reply: " << failed.raw);
    CHECK(failed.error_code() == -32603);
    CHECK(failed.json["error"].value("message", "").find("UTF-8") != std::string::npos);
    expect_long_echo(a, "after a bad answer");
    expect_long_echo(b, "unaffected");
    a.pump(200ms);
    b.pump(0ms);
    CHECK(a.responses().empty());
    CHECK(b.responses().empty());
    CHECK(env.server_pid("demo") == server);
    CHECK(env.daemon().log().find("not a JSON-RPC message") != std::string::npos);
}
