// Session multiplexing when something goes wrong: the server killed mid-load, a session that
// stops reading, and lines that are not JSON-RPC requests.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstring>
#include <thread>
#include <tuple>

#include "harness.h"
#include "mcp_session.h"
#include "session_list.h"

using namespace integration;
using nlohmann::json;

namespace {

// Whether `mcpctl --json sessions` lists session `id`.
}  // namespace

TEST_CASE("kill -9 of the server fails the calls in flight, the sessions carry on", "[multiplex]") {
    constexpr int kSessions = 4;
    TestEnv env("mux-kill");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");

    std::vector<std::unique_ptr<McpSession>> sessions;
    std::vector<std::vector<json>> calls(kSessions);
    for (int s = 0; s < kSessions; ++s) {
        sessions.push_back(std::make_unique<McpSession>(env.socket(), "demo"));
        sessions[s]->initialize("doomed-" + std::to_string(s));
        for (int k = 0; k < 2; ++k) {
            calls[s].push_back(sessions[s]->call_tool(
                "slow", {{"steps", 100}, {"interval_ms", 50}},
                {{"progressToken", "p" + std::to_string(s) + "-" + std::to_string(k)}}));
        }
    }
    wait_until("every call is running at the server", 10s, [&] {
        return std::all_of(sessions.begin(), sessions.end(), [](auto& s) {
            s->pump(5ms);
            return s->notifications("notifications/progress").size() >= 2;
        });
    });

    const pid_t victim = *env.server_pid("demo");
    const std::vector<pid_t> ours = env.marked_processes();
    REQUIRE(std::find(ours.begin(), ours.end(), victim) != ours.end());  // our own server
    const auto killed = Clock::now();
    REQUIRE(::kill(victim, SIGKILL) == 0);

    for (int s = 0; s < kSessions; ++s) {
        for (const json& id : calls[s]) {
            const McpMessage reply = sessions[s]->wait_response(id, 10s);
            INFO(sessions[s]->label() << " call " << id << ": " << reply.raw);
            CHECK(reply.error_code() == -32603);
        }
    }
    WARN("every in-flight call failed " << ms_since(killed) << " ms after kill -9");
    env.wait_state("demo", "running", 20s);
    WARN("the server was running again " << ms_since(killed) << " ms after kill -9");
    CHECK(env.server_pid("demo") != victim);

    for (int s = 0; s < kSessions; ++s) {
        McpSession& session = *sessions[s];
        INFO(session.label() << " inbox:\n" << session.describe_inbox());
        CHECK_FALSE(session.at_eof());
        const std::string text = "after the crash " + std::to_string(s);
        CHECK(session.wait_response(session.call_tool("echo", {{"text", text}})).tool_text() ==
              text);
        CHECK(session.responses().empty());  // nothing late or doubled for the failed calls
        CHECK_FALSE(session.notifications("notifications/tools/list_changed").empty());
    }
}

TEST_CASE("a session that stops reading is cut off while the others carry on", "[multiplex]") {
    constexpr int kLargeCalls = 40;
    constexpr int kEchoCalls = 200;
    TestEnv env("mux-slow-reader");
    env.write_registry("[daemon]\nmax_session_queue_bytes = 1048576\n\n" + server_toml("demo"));
    env.start_daemon();
    env.wait_state("demo", "running");
    const pid_t server_pid = *env.server_pid("demo");
    McpSession stalled(env.socket(), "demo"), reader(env.socket(), "demo");
    stalled.initialize("stalled");
    reader.initialize("reader");

    // From here on `stalled` only writes.
    for (int i = 0; i < kLargeCalls; ++i) {
        stalled.queue(request_line(std::to_string(1000 + i), "tools/call",
                                   {{"name", "large"}, {"arguments", {{"bytes", 262144}}}}));
    }
    while (stalled.flush()) std::this_thread::sleep_for(1ms);
    const auto started = Clock::now();
    int echoed = 0;
    for (int i = 0; i < kEchoCalls; ++i) {
        const std::string text = "still here " + std::to_string(i);
        echoed +=
            reader.wait_response(reader.call_tool("echo", {{"text", text}}), 10s).tool_text() ==
            text;
    }
    WARN(kEchoCalls << " echo calls next to a stalled session took " << ms_since(started) << " ms");
    CHECK(echoed == kEchoCalls);

    wait_until("mcpd logs that the stalled session stopped reading", 10s,
               [&] { return env.daemon().log().find("stopped reading") != std::string::npos; });
    CHECK(stalled.wait_closed(10s));
    WARN("the stalled session ended with "
         << (stalled.stream_error() == 0 ? std::string("EOF")
                                         : std::strerror(stalled.stream_error())));
    CHECK_FALSE(lists_session(env, stalled.session_id()));
    CHECK(lists_session(env, reader.session_id()));

    CHECK_FALSE(env.daemon().poll_exit());
    CHECK(env.ctl({"version"}).exit_code == 0);
    CHECK(env.server_pid("demo") == server_pid);
    CHECK(reader.wait_response(reader.call_tool("echo", {{"text", "last"}})).tool_text() == "last");
}

TEST_CASE("malformed and oversized lines get JSON-RPC errors, the session carries on",
          "[multiplex]") {
    TestEnv env("mux-bad-lines");
    env.write_registry("[daemon]\nmax_message_bytes = 65536\n\n" + server_toml("demo"));
    env.start_daemon();
    McpSession a(env.socket(), "demo");
    a.initialize("sloppy");
    const auto still_works = [&a](const std::string& after) {
        INFO("an echo call after " << after);
        CHECK(a.wait_response(a.call_tool("echo", {{"text", after}})).tool_text() == after);
    };
    const auto next_response = [&a] {
        auto reply = a.wait_for([](const McpMessage& m) { return m.is_response(); }, 5s);
        INFO("inbox:\n" << a.describe_inbox());
        REQUIRE(reply);
        return *reply;
    };

    const std::vector<std::tuple<std::string, std::string, int>> cases = {
        {"a line that is not JSON", "{not json", -32700},
        {"a line that is not JSON but starts like a literal", "this is {not json", -32700},
        {"a cut-off array", "[1,2", -32700},
        {"a batch", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", -32600},
        {"a null id", R"({"jsonrpc":"2.0","id":null,"method":"ping"})", -32600},
    };
    for (const auto& [what, line, code] : cases) {
        INFO(what);
        REQUIRE(a.send_line(line));
        const McpMessage reply = next_response();
        INFO("reply: " << reply.raw);
        CHECK(reply.raw_id() == "null");
        CHECK(reply.error_code() == code);
        still_works(what);
    }

    const std::string big(100000, 'x');
    REQUIRE(a.send_line(
        request_line("4242", "tools/call", {{"name", "echo"}, {"arguments", {{"text", big}}}})));
    const McpMessage refused = next_response();
    WARN("a line over max_message_bytes was answered: " << refused.raw);
    CHECK(refused.is_error());
    CHECK((refused.raw_id() == "null" || refused.raw_id() == "4242"));
    still_works("an oversized line");
    a.pump(100ms);
    CHECK(a.responses().empty());

    const std::string fits(60000, 'y');
    CHECK(a.wait_response(a.call_tool("echo", {{"text", fits}})).tool_text() == fits);

    // An id still in flight cannot be used again; the first call is unaffected.
    a.request("tools/call", {{"name", "slow"}, {"arguments", {{"steps", 4}, {"interval_ms", 50}}}},
              "dup");
    a.request("tools/call", {{"name", "echo"}, {"arguments", {{"text", "dup"}}}}, "dup");
    const McpMessage duplicate = a.wait_response("dup");
    INFO("first reply to \"dup\": " << duplicate.raw);
    CHECK(duplicate.error_code() == -32600);
    CHECK(a.wait_response("dup").tool_text() == "done after 4 steps");
    still_works("a duplicate id");
}

TEST_CASE("a session's unreadable answer to the server's request fails it at once", "[multiplex]") {
    // The answer shows no id, but the sampling request is the only one waiting on the session:
    // the server gets -32603 instead of waiting, and its tool says so.
    TestEnv env("mux-unreadable-answer");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession s(env.socket(), "demo");
    s.initialize("garbler", {{"sampling", json::object()}});
    const json call = s.call_tool("sample", {{"prompt", "say hi"}});
    const auto asked = s.wait_for([](const McpMessage& m) { return m.is_request(); }, 10s);
    INFO(s.describe_inbox());
    REQUIRE(asked);
    REQUIRE(s.send_line("not json"));
    const McpMessage result = s.wait_response(call, 10s);
    INFO(result.raw);
    CHECK(result.json["result"].value("isError", false));
    CHECK_THAT(result.tool_text(), Catch::Contains("unusable"));
}
