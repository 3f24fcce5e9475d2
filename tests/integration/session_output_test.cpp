// What a session is sent and what becomes of what it answers, at the edges of the limits:
// large results under the default max_session_queue_bytes reach a client that reads them at an
// ordinary pace, a client that reads nothing is still cut off, and a client's answer to a
// server request over max_message_bytes fails that request at the server instead of leaving it
// waiting.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "byte_units.h"
#include "harness.h"
#include "mcp_session.h"
#include "session_list.h"

using namespace integration;
using nlohmann::json;

namespace {

constexpr std::size_t kLargeResult = 6 * kMiB;  // over the default 4 MiB queue cap

// What the demo server's `large` tool returns: 'a' to 'z', repeating.
std::string large_text(std::size_t bytes) {
    std::string text(bytes, 'a');
    for (std::size_t i = 0; i < bytes; ++i) text[i] = static_cast<char>('a' + i % 26);
    return text;
}

// Reads a session's socket the way a client busy with what it reads does: 64 KiB, then a
// pause, and again, handing out each complete line.
class PacedReader {
public:
    explicit PacedReader(McpSession& session) : session_(session) {}

    // One read of at most 64 KiB after a 10 ms pause; false at the end of the stream.
    bool step(const std::function<void(std::string&&)>& on_line) {
        std::this_thread::sleep_for(10ms);
        char chunk[64 * 1024];
        const ssize_t n = ::read(session_.read_fd(), chunk, sizeof chunk);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
        if (n > 0) buffer_.append(chunk, static_cast<std::size_t>(n));
        std::size_t start = 0;
        for (std::size_t end; (end = buffer_.find('\n', start)) != std::string::npos;
             start = end + 1)
            on_line(buffer_.substr(start, end - start));
        buffer_.erase(0, start);
        return true;
    }

private:
    McpSession& session_;
    std::string buffer_;
};

}  // namespace

TEST_CASE("two 6 MiB results at once reach a client that reads them at an ordinary pace",
          "[session][budget]") {
    TestEnv env("session-two-large");
    env.write_registry(server_toml("demo"));  // every cap at its default
    env.start_daemon();
    env.wait_state("demo", "running");
    McpSession client(env.socket(), "demo");
    client.initialize("steady reader");

    // Both asked before either is read: the server answers them back to back, so mcpd holds
    // both for the client at once, 12 MiB against a 4 MiB cap.
    const json first = client.call_tool("large", {{"bytes", kLargeResult}});
    const json second = client.call_tool("large", {{"bytes", kLargeResult}});
    // What the socket holds aside, both wait in mcpd before the client reads a byte.
    const auto cut_off = [&env] {
        return env.daemon().log().find("stopped reading") != std::string::npos;
    };
    wait_until("both results are queued for the client", 30s, [&] {
        const json queued = env.status_json()["daemon"]["queued_output"];
        return cut_off() || queued.value("bytes", std::size_t{0}) >= 2 * kLargeResult - kMiB;
    });
    REQUIRE_FALSE(cut_off());

    std::map<json, McpMessage> replies;
    PacedReader reader(client);
    int echoes_sent = 0;
    const auto started = Clock::now();
    bool open = true;
    for (int step = 0; open && replies.size() < 2 + static_cast<std::size_t>(echoes_sent) &&
                       Clock::now() < started + 60s;
         ++step) {
        open = reader.step([&](std::string&& line) {
            McpMessage message;
            message.raw = std::move(line);
            message.json = json::parse(message.raw, nullptr, false);
            if (message.is_response()) replies[message.json["id"]] = std::move(message);
        });
        // Small calls on the way, answered behind what is still queued.
        if (step % 40 == 0 && echoes_sent < 4) {
            client.call_tool("echo", {{"text", "meanwhile " + std::to_string(echoes_sent)}});
            ++echoes_sent;
        }
    }
    WARN("read 12 MiB at an ordinary pace in " << ms_since(started) << " ms");
    INFO("the log:\n" << env.daemon().log());
    REQUIRE(open);
    REQUIRE(replies.count(first) == 1);
    REQUIRE(replies.count(second) == 1);
    const std::string expected = large_text(kLargeResult);
    CHECK(replies[first].tool_text() == expected);
    CHECK(replies[second].tool_text() == expected);
    CHECK(replies.size() == 2 + static_cast<std::size_t>(echoes_sent));
    CHECK_FALSE(cut_off());
    CHECK(lists_session(env, client.session_id()));
    CHECK(client.wait_response(client.call_tool("echo", {{"text", "after"}})).tool_text() ==
          "after");
}

TEST_CASE("a client that asks for large results and reads none is still cut off",
          "[session][budget]") {
    TestEnv env("session-large-stalled");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t server = *env.server_pid("demo");
    McpSession stalled(env.socket(), "demo"), reader(env.socket(), "demo");
    stalled.initialize("stalled");
    reader.initialize("reader");

    // Four 6 MiB results and it never reads: two are let past the cap, the third cuts it.
    for (int i = 0; i < 4; ++i) stalled.call_tool("large", {{"bytes", kLargeResult}});
    wait_until("mcpd logs that the stalled session stopped reading", 20s, [&] {
        return env.daemon().log().find("the client stopped reading") != std::string::npos;
    });
    CHECK(stalled.wait_closed(10s));
    CHECK_FALSE(lists_session(env, stalled.session_id()));
    CHECK(reader.wait_response(reader.call_tool("echo", {{"text", "unaffected"}})).tool_text() ==
          "unaffected");
    CHECK(lists_session(env, reader.session_id()));
    CHECK(env.server_pid("demo") == server);
}

TEST_CASE("a client's answer over max_message_bytes fails the server's request and nothing else",
          "[session]") {
    TestEnv env("session-huge-answer");
    env.write_registry("[daemon]\nmax_message_bytes = 65536\n\n" + server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t server = *env.server_pid("demo");
    McpSession client(env.socket(), "demo");
    client.initialize("verbose client", {{"sampling", json::object()}, {"roots", json::object()}});
    const std::string filler(100 * 1024, 'w');

    // sampling/createMessage, answered with the id first.
    const json sample = client.call_tool("sample", {{"prompt", "say a lot"}});
    auto asked = client.wait_for([](const McpMessage& m) { return m.is_request(); }, 10s);
    INFO(client.describe_inbox());
    REQUIRE(asked);
    REQUIRE(asked->method() == "sampling/createMessage");
    const json answer = {{"role", "assistant"},
                         {"content", {{"type", "text"}, {"text", filler}}},
                         {"model", "test-model"},
                         {"stopReason", "endTurn"}};
    REQUIRE(client.send_line(R"({"jsonrpc":"2.0","id":)" + asked->raw_id() + R"(,"result":)" +
                             answer.dump() + "}"));
    const McpMessage sampled = client.wait_response(sample, 10s);
    INFO("the tool's result: " << sampled.raw.substr(0, 400));
    CHECK(sampled.json["result"].value("isError", false));
    CHECK(sampled.tool_text().find("sampling/createMessage") != std::string::npos);
    CHECK(sampled.tool_text().find("max_message_bytes") != std::string::npos);

    // roots/list, answered with the id last (as JavaScript SDKs write it).
    const json roots = client.call_tool("roots", json::object());
    asked = client.wait_for([](const McpMessage& m) { return m.is_request(); }, 10s);
    REQUIRE(asked);
    REQUIRE(asked->method() == "roots/list");
    REQUIRE(client.send_line(R"({"jsonrpc":"2.0","result":{"roots":[{"uri":"file:///)" + filler +
                             R"("}]},"id":)" + asked->raw_id() + "}"));
    const McpMessage listed = client.wait_response(roots, 10s);
    INFO("the tool's result: " << listed.raw.substr(0, 400));
    CHECK(listed.json["result"].value("isError", false));
    CHECK(listed.tool_text().find("roots/list") != std::string::npos);

    // The client was told each time its line was dropped; it goes on as before.
    const auto dropped = client.wait_for([](const McpMessage& m) { return m.is_error(); }, 5s);
    REQUIRE(dropped);
    CHECK(dropped->error_code() == -32600);
    CHECK(client.wait_response(client.call_tool("echo", {{"text", "still here"}})).tool_text() ==
          "still here");
    CHECK(lists_session(env, client.session_id()));
    CHECK(env.server_pid("demo") == server);
    CHECK(env.daemon().log().find("discarded a message of 10") != std::string::npos);
}
