// 2025-03-26 JSON-RPC batches: a session that negotiated that revision may send an array of
// messages on one line and gets the answers to its requests back as one array.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

// initialize asking for 2025-03-26 (the demo server speaks it), then initialized.
void initialize_2025_03_26(McpSession& s) {
    const json id =
        s.request("initialize", {{"protocolVersion", "2025-03-26"},
                                 {"capabilities", json::object()},
                                 {"clientInfo", {{"name", "batcher"}, {"version", "1"}}}});
    const McpMessage reply = s.wait_response(id);
    INFO(reply.raw);
    REQUIRE(reply.json["result"]["protocolVersion"] == "2025-03-26");
    s.notify("notifications/initialized");
}

std::string batch_of(const std::vector<std::string>& lines) {
    std::string out = "[";
    for (const std::string& line : lines) {
        if (out.size() > 1) out += ',';
        out += line;
    }
    out += ']';
    return out;
}

std::string echo_request(std::string_view raw_id, const std::string& text) {
    return request_line(raw_id, "tools/call", {{"name", "echo"}, {"arguments", {{"text", text}}}});
}

McpMessage wait_array(McpSession& s, Duration timeout = 10s) {
    auto reply = s.wait_for([](const McpMessage& m) { return m.json.is_array(); }, timeout);
    INFO("inbox:\n" << s.describe_inbox());
    REQUIRE(reply);
    return *reply;
}

// The answer in batch reply `reply` whose id is `id` (compared as JSON).
json answer_to(const McpMessage& reply, const json& id) {
    for (const json& answer : reply.json) {
        if (answer.contains("id") && answer["id"] == id) return answer;
    }
    FAIL("no answer to " << id.dump() << " in " << reply.raw);
    return {};
}

}  // namespace

TEST_CASE("a 2025-03-26 batch is split and its answers come back as one array", "[batch]") {
    TestEnv env("batch-split");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession s(env.socket(), "demo");
    initialize_2025_03_26(s);

    REQUIRE(s.send_line(batch_of({
        echo_request("1", "first"),
        request_line(R"("p\u0071")", "ping"),
        R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})",
        "42",
        echo_request("12345678901234567890", "second"),
        request_line(R"("init")", "initialize", {{"protocolVersion", "2025-03-26"}}),
    })));
    const McpMessage reply = wait_array(s);
    INFO(reply.raw);
    REQUIRE(reply.json.size() == 5);
    CHECK(answer_to(reply, 1)["result"]["content"][0]["text"] == "first");
    CHECK(answer_to(reply, 12345678901234567890ULL)["result"]["content"][0]["text"] == "second");
    CHECK(answer_to(reply, "pq")["result"] == json::object());
    CHECK(answer_to(reply, nullptr)["error"]["code"] == -32600);  // the element 42
    CHECK(answer_to(reply, "init")["error"]["code"] == -32600);   // never inside a batch
    // Ids come back byte for byte.
    CHECK(reply.raw.find(R"("id":"p\u0071")") != std::string::npos);
    CHECK(reply.raw.find(R"("id":12345678901234567890,)") != std::string::npos);
    s.pump(200ms);
    INFO("inbox:\n" << s.describe_inbox());
    CHECK(s.inbox().empty());
}

TEST_CASE("a batch's reply waits for its slowest request, other traffic is not held", "[batch]") {
    TestEnv env("batch-wait");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession s(env.socket(), "demo");
    initialize_2025_03_26(s);

    const json slow = {{"jsonrpc", "2.0"},
                       {"id", 1},
                       {"method", "tools/call"},
                       {"params",
                        {{"name", "slow"},
                         {"arguments", {{"steps", 4}, {"interval_ms", 150}}},
                         {"_meta", {{"progressToken", "t"}}}}}};
    REQUIRE(s.send_line(batch_of({slow.dump(), echo_request("2", "quick")})));
    REQUIRE(s.send_line(echo_request("3", "alone")));
    const McpMessage alone = s.wait_response(3);
    CHECK(alone.tool_text() == "alone");
    const McpMessage reply = wait_array(s);
    INFO(reply.raw);
    REQUIRE(reply.json.size() == 2);
    CHECK(answer_to(reply, 1)["result"]["content"][0]["text"] == "done after 4 steps");
    CHECK(answer_to(reply, 2)["result"]["content"][0]["text"] == "quick");
    CHECK(alone.seq < reply.seq);
    const std::vector<McpMessage> progress = s.notifications("notifications/progress");
    CHECK(progress.size() == 4);
    for (const McpMessage& p : progress) CHECK(p.seq < reply.seq);  // sent at once
}

TEST_CASE("empty, oversized and notification-only batches", "[batch]") {
    TestEnv env("batch-bounds");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession s(env.socket(), "demo");
    initialize_2025_03_26(s);
    const auto next = [&s] {
        auto m = s.wait_for([](const McpMessage&) { return true; }, 10s);
        REQUIRE(m);
        return *m;
    };

    REQUIRE(s.send_line("[]"));
    McpMessage empty = next();
    INFO(empty.raw);
    CHECK(empty.json.is_object());
    CHECK(empty.error_code() == -32600);
    CHECK(empty.raw_id() == "null");

    std::vector<std::string> pings;
    for (int i = 0; i < 1000; ++i) pings.push_back(request_line(std::to_string(i), "ping"));
    REQUIRE(s.send_line(batch_of(pings)));
    const McpMessage thousand = next();
    REQUIRE(thousand.json.is_array());
    CHECK(thousand.json.size() == 1000);

    pings.push_back(request_line("1000", "ping"));
    REQUIRE(s.send_line(batch_of(pings)));
    const McpMessage refused = next();
    INFO(refused.raw.substr(0, 300));
    CHECK(refused.json.is_object());
    CHECK(refused.error_code() == -32600);

    REQUIRE(s.send_line(
        batch_of({R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                  R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})"})));
    REQUIRE(s.send_line(request_line("\"after\"", "ping")));
    const McpMessage after = next();  // nothing came for the notifications
    CHECK(after.raw_id() == "\"after\"");
}

TEST_CASE("only a session that negotiated 2025-03-26 has its batch split", "[batch]") {
    TestEnv env("batch-refused");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession older(env.socket(), "demo"), newer(env.socket(), "demo"),
        fresh(env.socket(), "demo");
    initialize_2025_03_26(older);
    newer.initialize("newer");  // 2025-06-18: batches were removed
    const std::string pings = batch_of({request_line("7", "ping"), request_line("8", "ping")});

    REQUIRE(older.send_line(pings));
    CHECK(wait_array(older).json.size() == 2);

    const std::string init = request_line("1", "initialize",
                                          {{"protocolVersion", "2025-03-26"},
                                           {"capabilities", json::object()},
                                           {"clientInfo", {{"name", "fresh"}, {"version", "1"}}}});
    const std::vector<std::pair<McpSession*, std::string>> cases = {
        {&newer, pings},
        {&fresh, batch_of({init})},  // initialize inside a batch: the session stays uninitialized
    };
    for (const auto& [session, line] : cases) {
        INFO(session->label());
        REQUIRE(session->send_line(line));
        auto reply = session->wait_for([](const McpMessage&) { return true; }, 10s);
        REQUIRE(reply);
        INFO(reply->raw);
        CHECK(reply->json.is_object());
        CHECK(reply->error_code() == -32600);
        CHECK(reply->raw_id() == "null");
        session->pump(100ms);
        CHECK(session->inbox().empty());
    }
    initialize_2025_03_26(fresh);
}

TEST_CASE("a cancelled request no longer holds its batch, a session leaving drops its batches",
          "[batch]") {
    TestEnv env("batch-cancel");
    env.write_registry(server_toml("demo"));
    env.start_daemon();
    McpSession s(env.socket(), "demo");
    initialize_2025_03_26(s);
    const std::string forever =
        request_line(R"("long")", "tools/call",
                     {{"name", "slow"}, {"arguments", {{"steps", 1000}, {"interval_ms", 100}}}});

    REQUIRE(s.send_line(batch_of({forever, echo_request("2", "kept")})));
    s.pump(300ms);
    CHECK(s.inbox().empty());  // the echo's answer waits for the slow call
    s.notify("notifications/cancelled", {{"requestId", "long"}, {"reason", "enough"}});
    const McpMessage reply = wait_array(s);
    INFO(reply.raw);
    REQUIRE(reply.json.size() == 1);
    CHECK(answer_to(reply, 2)["result"]["content"][0]["text"] == "kept");

    {
        McpSession leaving(env.socket(), "demo");
        initialize_2025_03_26(leaving);
        REQUIRE(leaving.send_line(batch_of({forever, echo_request("2", "lost")})));
        leaving.pump(100ms);
    }
    // The server and mcpd carry on for everyone else.
    REQUIRE(s.send_line(batch_of({echo_request("3", "still")})));
    const McpMessage still = wait_array(s);
    CHECK(answer_to(still, 3)["result"]["content"][0]["text"] == "still");
}

TEST_CASE("a 2025-03-26 server's batches are split and each message routed", "[batch]") {
    // --batch-output: the server speaks 2025-03-26 and writes a tool's log notification and
    // its result as one array.
    TestEnv env("batch-server");
    env.write_registry(server_toml("demo", {"--batch-output"}));
    env.start_daemon();
    McpSession s(env.socket(), "demo"), other(env.socket(), "demo");
    initialize_2025_03_26(s);
    initialize_2025_03_26(other);

    const json id = s.call_tool("log", {{"level", "warning"}, {"message", "batched"}});
    const McpMessage reply = s.wait_response(id, 10s);
    INFO(reply.raw);
    CHECK(reply.tool_text() == "logged");
    for (McpSession* session : {&s, &other}) {
        const auto log = session->wait_for(
            [](const McpMessage& m) { return m.method() == "notifications/message"; }, 10s);
        INFO(session->describe_inbox());
        REQUIRE(log);
        CHECK(log->json["params"]["data"] == "batched");
    }
    CHECK(env.daemon_log().find("not a JSON-RPC message") == std::string::npos);
}
