// A group session whose client negotiated 2025-03-26 takes that revision's JSON-RPC batches as a
// plain session does (docs/GROUPS.md, docs/MULTIPLEXING.md "Batches"): each message routed to
// its member, and the answers to the batch's requests back as one array.
#include <catch2/catch.hpp>
#include <string>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

std::string group_batch_registry() {
    return server_toml("alpha", {"--tick-ms=0"}) + "\n" + server_toml("beta", {"--tick-ms=0"}) +
           "\n[groups.pair]\nservers = [\"alpha\", \"beta\"]\n";
}

void initialize_at(McpSession& session, const std::string& version) {
    const json id =
        session.request("initialize", {{"protocolVersion", version},
                                       {"capabilities", json::object()},
                                       {"clientInfo", {{"name", "batcher"}, {"version", "1"}}}});
    const McpMessage reply = session.wait_response(id);
    INFO(reply.raw);
    REQUIRE(reply.json["result"]["protocolVersion"] == version);
    session.notify("notifications/initialized");
}

std::string group_echo(std::string_view raw_id, const std::string& tool, const std::string& text) {
    return request_line(raw_id, "tools/call", {{"name", tool}, {"arguments", {{"text", text}}}});
}

// The first array the session receives.
McpMessage batch_reply(McpSession& session) {
    auto reply = session.wait_for([](const McpMessage& m) { return m.json.is_array(); }, 10s);
    INFO("inbox:\n" << session.describe_inbox());
    REQUIRE(reply);
    return *reply;
}

json answer_with_id(const McpMessage& reply, const json& id) {
    for (const json& answer : reply.json) {
        if (answer.contains("id") && answer["id"] == id) return answer;
    }
    FAIL("no answer to " << id.dump() << " in " << reply.raw);
    return {};
}

}  // namespace

TEST_CASE("a group session of a 2025-03-26 client answers a batch with one array",
          "[group][batch]") {
    TestEnv env("group-batch");
    env.write_registry(group_batch_registry());
    env.start_daemon();
    McpSession session(env.socket(), "pair");
    initialize_at(session, "2025-03-26");

    // Requests to both members, one the group refuses itself, and a notification.
    const std::string batch = "[" + group_echo("1", "alpha__echo", "to alpha") + "," +
                              group_echo(R"("b")", "beta__echo", "to beta") + "," +
                              group_echo("3", "gamma__echo", "nobody") + "," +
                              R"({"jsonrpc":"2.0","method":"notifications/roots/list_changed"})" +
                              "," + request_line("4", "ping") + "]";
    REQUIRE(session.send_line(batch));
    const McpMessage reply = batch_reply(session);
    INFO(reply.raw);
    REQUIRE(reply.json.size() == 4);
    CHECK(answer_with_id(reply, 1)["result"]["content"][0]["text"] == "to alpha");
    CHECK(answer_with_id(reply, "b")["result"]["content"][0]["text"] == "to beta");
    CHECK(answer_with_id(reply, 3)["error"]["code"] == -32602);
    CHECK(answer_with_id(reply, 4)["result"] == json::object());
    // Nothing of it came as a line of its own.
    CHECK(session.responses().empty());

    // A line after the batch is answered as ever.
    const McpMessage single =
        session.wait_response(session.call_tool("beta__echo", {{"text", "alone"}}));
    CHECK(single.tool_text() == "alone");
}

TEST_CASE("a group session of any other revision refuses a batch, as a plain session does",
          "[group][batch]") {
    TestEnv env("group-batch-refused");
    env.write_registry(group_batch_registry());
    env.start_daemon();
    McpSession session(env.socket(), "pair");
    initialize_at(session, "2025-06-18");
    REQUIRE(session.send_line("[" + group_echo("1", "alpha__echo", "x") + "]"));
    const auto refused = session.wait_for([](const McpMessage& m) { return m.is_error(); }, 10s);
    REQUIRE(refused);
    CHECK(refused->error_code() == -32600);
    CHECK(refused->raw_id() == "null");
}
