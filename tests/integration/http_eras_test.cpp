// The HTTP front door beyond one server in the session eras: groups and servers with filters
// at /mcp/NAME, and the stateless 2026-07-28 era (one request per POST, its headers checked
// against the body, a closed stream cancelling the request at the server).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "curl_client.h"
#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using nlohmann::json;

namespace {

std::vector<std::string> eras_post(const std::string& body, const std::vector<std::string>& headers = {}) {
    std::vector<std::string> args = {"-X", "POST", "-H", "Content-Type: application/json", "-H",
                                     "Accept: application/json, text/event-stream"};
    for (const std::string& header : headers) args.insert(args.end(), {"-H", header});
    args.insert(args.end(), {"--data-binary", body});
    return args;
}

std::vector<std::string> eras_on(const std::string& socket, std::vector<std::string> args, const std::string& url) {
    args.insert(args.begin(), {"--unix-socket", socket});
    args.push_back(url);
    return args;
}

json eras_modern_call(int id, const std::string& tool, const json& arguments) {
    return {{"jsonrpc", "2.0"},
            {"id", id},
            {"method", "tools/call"},
            {"params",
             {{"name", tool},
              {"arguments", arguments},
              {"_meta", modern_meta("curl-modern")}}}};
}

std::vector<std::string> eras_modern_headers(const std::string& tool) {
    return {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: " + tool};
}

}  // namespace

TEST_CASE("over HTTP a group and a server with filters are served as on the socket", "[http]") {
    TestEnv env("http-groups");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" + server_toml("demo") +
                       server_toml("other") + server_toml("narrow", {}, {{"tools", "[\"echo\"]"}}) +
                       "[groups.both]\nservers = [\"demo\", \"other\"]\n");
    env.start_daemon();
    const std::string initialize =
        R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
        R"("capabilities":{},"clientInfo":{"name":"curl-group","version":"1"}}})";
    const auto session_of = [&](const std::string& url) {
        HttpAnswer init = curl(eras_on(http, eras_post(initialize), url));
        INFO(init.raw);
        REQUIRE(init.status == 200);
        const std::string id = init.headers["mcp-session-id"];
        CHECK(curl(eras_on(http, eras_post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                                           {"Mcp-Session-Id: " + id}), url)).status == 202);
        return id;
    };
    // Every page of tools/list (a group pages by member).
    const auto tool_names = [&](const std::string& url, const std::string& id) {
        std::vector<std::string> names;
        json cursor;
        for (int page = 0; page < 10; ++page) {
            json request = {{"jsonrpc", "2.0"}, {"id", 100 + page}, {"method", "tools/list"}};
            if (cursor.is_string()) request["params"] = {{"cursor", cursor}};
            HttpAnswer listed = curl(eras_on(http, eras_post(request.dump(), {"Mcp-Session-Id: " + id}), url));
            const std::vector<json> events = sse_messages(listed.body);
            if (events.size() != 1) break;
            for (const json& tool : events[0]["result"]["tools"]) names.push_back(tool["name"]);
            cursor = events[0]["result"].value("nextCursor", json());
            if (!cursor.is_string()) break;
        }
        return names;
    };

    const std::string group_url = "http://localhost/mcp/both";
    const std::string group = session_of(group_url);
    const std::vector<std::string> names = tool_names(group_url, group);
    CHECK(std::find(names.begin(), names.end(), "demo__echo") != names.end());
    CHECK(std::find(names.begin(), names.end(), "other__echo") != names.end());
    HttpAnswer called = curl(eras_on(http, eras_post(
        R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other__echo","arguments":{"text":"via the group"}}})",
        {"Mcp-Session-Id: " + group}), group_url));
    const std::vector<json> events = sse_messages(called.body);
    REQUIRE(events.size() == 1);
    CHECK(events[0]["result"]["content"][0]["text"] == "via the group");
    CHECK(env.server("other")["sessions"] == 1);

    // A server with filters shows what its filters let through, as over the socket.
    const std::string narrow_url = "http://localhost/mcp/narrow";
    CHECK(tool_names(narrow_url, session_of(narrow_url)) == std::vector<std::string>{"echo"});

    // An ad-hoc group, named as `mcpctl connect other narrow` names it: each member as it is
    // served alone (narrow with its filters), prefixed by its name.
    const std::string adhoc_url = "http://localhost/mcp/other+narrow";
    const std::string adhoc = session_of(adhoc_url);
    const std::vector<std::string> adhoc_names = tool_names(adhoc_url, adhoc);
    CHECK(std::find(adhoc_names.begin(), adhoc_names.end(), "other__echo") != adhoc_names.end());
    CHECK(std::find(adhoc_names.begin(), adhoc_names.end(), "other__add") != adhoc_names.end());
    CHECK(std::find(adhoc_names.begin(), adhoc_names.end(), "narrow__echo") != adhoc_names.end());
    CHECK(std::find(adhoc_names.begin(), adhoc_names.end(), "narrow__add") == adhoc_names.end());
    HttpAnswer via_adhoc = curl(eras_on(http, eras_post(
        R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"narrow__echo","arguments":{"text":"ad hoc"}}})",
        {"Mcp-Session-Id: " + adhoc}), adhoc_url));
    const std::vector<json> adhoc_events = sse_messages(via_adhoc.body);
    REQUIRE(adhoc_events.size() == 1);
    CHECK(adhoc_events[0]["result"]["content"][0]["text"] == "ad hoc");
    // A name twice, a server that does not exist, an empty name: no such group.
    for (const std::string bad : {"demo+demo", "demo+nosuch", "demo+", "+demo", "demo++other"}) {
        INFO(bad);
        CHECK(curl(eras_on(http, eras_post(initialize), "http://localhost/mcp/" + bad)).status == 404);
    }
}

TEST_CASE("2026-07-28 over HTTP: a request per POST, headers that mirror the body, a closed stream cancels",
          "[http]") {
    TestEnv env("http-modern");
    const std::string http = env.path("http.sock");
    env.write_registry("[daemon]\nhttp_listen = [\"unix:" + http + "\"]\n\n" +
                       server_toml("dual", {"--era=dual"}) + server_toml("legacy"));
    env.start_daemon();
    const std::string dual = "http://localhost/mcp/dual";

    HttpAnswer answered = curl(eras_on(http, eras_post(eras_modern_call(7, "echo", {{"text", "stateless"}}).dump(),
                                                       eras_modern_headers("echo")), dual));
    INFO(answered.raw);
    CHECK(answered.status == 200);
    CHECK_FALSE(answered.headers.contains("mcp-session-id"));
    const std::vector<json> events = sse_messages(answered.body);
    REQUIRE(events.size() == 1);
    CHECK(events[0]["id"] == 7);
    CHECK(events[0]["result"]["content"][0]["text"] == "stateless");
    wait_until("the request's session is gone", 10s, [&] { return env.server("dual")["sessions"] == 0; });

    // What a proxy would route on must be what runs: a name that differs is a HeaderMismatch.
    HttpAnswer mismatched = curl(eras_on(http, eras_post(eras_modern_call(8, "echo", {{"text", "x"}}).dump(),
                                                         eras_modern_headers("add")), dual));
    CHECK(mismatched.status == 400);
    CHECK(json::parse(mismatched.body, nullptr, false)["error"]["code"] == -32020);
    std::vector<std::string> no_method = eras_modern_headers("echo");
    no_method.erase(no_method.begin() + 1);
    CHECK(curl(eras_on(http, eras_post(eras_modern_call(9, "echo", {{"text", "x"}}).dump(), no_method), dual)).status == 400);
    // No GET stream and no sessions in this era.
    CHECK(curl({"--unix-socket", http, "-H", "MCP-Protocol-Version: 2026-07-28", "-H",
                "Accept: text/event-stream", dual}).status == 405);

    // A server that speaks only the handshake says so, with the versions to fall back to.
    env.wait_state("legacy", "running");
    HttpAnswer legacy = curl(eras_on(http, eras_post(eras_modern_call(10, "echo", {{"text", "x"}}).dump(),
                                                     eras_modern_headers("echo")), "http://localhost/mcp/legacy"));
    CHECK(legacy.status == 400);
    const json refused = json::parse(legacy.body, nullptr, false);
    CHECK(refused["error"]["code"] == -32022);
    CHECK(refused["error"]["data"]["supported"].size() >= 3);

    // Closing the stream of a call in progress cancels it at the server.
    HttpAnswer cut = curl(eras_on(http, {"--max-time", "1", "-X", "POST", "-H", "Content-Type: application/json",
                                         "-H", "Accept: application/json, text/event-stream", "-H",
                                         "MCP-Protocol-Version: 2026-07-28", "-H", "Mcp-Method: tools/call",
                                         "-H", "Mcp-Name: slow", "--data-binary",
                                         eras_modern_call(11, "slow", {{"steps", 100}, {"interval_ms", 100}}).dump()},
                                  dual));
    CHECK(cut.status == 200);
    wait_until("the cut call is counted as cancelled", 10s, [&] {
        const json stats = json::parse(env.ctl({"--json", "stats", "dual"}).out, nullptr, false);
        return stats["servers"][0]["totals"]["cancelled"] == 1 && stats["servers"][0]["totals"]["in_flight"] == 0;
    });
    CHECK(env.daemon_log().find("the client closed the request's stream") != std::string::npos);
}
