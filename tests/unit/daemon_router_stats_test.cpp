// Router: what each forwarded request counts as in its traffic stats (docs/STATS.md), for every
// way a request can end, the request log's records of them, and the names it keeps: a tool by
// name once the child listed it, bounded client names and logged names.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using namespace std::chrono_literals;

namespace {

std::string call_tool(int id, const std::string& tool) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":{}}})";
}

// Session `id` lists the child's tools, which answers with `names` (`cursor`: a later page).
void session_lists_tools(RouterHarness& h, SessionId id, const std::vector<std::string>& names,
                         const std::string& cursor = {}) {
    json params = json::object();
    if (!cursor.empty()) params["cursor"] = cursor;
    const json request = {
        {"jsonrpc", "2.0"}, {"id", "list"}, {"method", "tools/list"}, {"params", params}};
    json tools = json::array();
    for (const std::string& name : names)
        tools.push_back({{"name", name}, {"inputSchema", json::object()}});
    h.answer(h.forward(id, request.dump()), json{{"tools", tools}}.dump());
    h.env.session_lines[id].clear();
}

std::map<SessionId, CallCounters> session_counters(const Router& router) {
    std::map<SessionId, CallCounters> out;
    router.for_each_session_counters(
        [&](SessionId id, const CallCounters& counters) { out[id] = counters; });
    return out;
}

}  // namespace

TEST_CASE("router: each outcome of a forwarded request is counted, per tool and session",
          "[router][stats]") {
    config::ServerConfig config = router_config();
    config.request_timeout = 500ms;
    RouterHarness h(config);
    h.router.set_request_log(true);
    h.child_ready();
    h.connect(1);
    h.connect(2);
    session_lists_tools(h, 1, {"echo", "slow"});  // not "nope"
    h.env.clear_records();
    h.env.settled.clear();

    // A reply after 3 ms.
    const std::string echo = h.forward(1, call_tool(1, "echo"));
    CHECK(h.router.stats().total().in_flight == 1);
    h.env.advance(3ms);
    h.answer(echo, R"({"content":[{"type":"text","text":"hi"}]})");
    // A tool's failure (isError), a JSON-RPC error.
    h.answer(h.forward(1, call_tool(2, "echo")), R"({"content":[],"isError":true})");
    h.answer_error(h.forward(2, call_tool(3, "nope")), -32602, "unknown tool");
    // Cancelled by its client.
    h.forward(2, call_tool(4, "slow"));
    h.send(2, R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}})");
    // Out of request_timeout: another method, counted by its name.
    h.forward(1, R"({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"demo://a"}})");
    h.env.advance(600ms);
    h.router.on_timer();
    // The child goes before answering.
    h.forward(2, call_tool(6, "echo"));
    h.router.on_child_gone("exited with status 1");

    const TrafficStats& stats = h.router.stats();
    const CallCounters& total = stats.total();
    CHECK(total.requests == 7);  // the tools/list too
    CHECK(total.in_flight == 0);
    CHECK(total.count(Outcome::reply) == 2);  // the tools/list's, and the echo's
    for (const Outcome outcome : {Outcome::error, Outcome::tool_error, Outcome::cancelled,
                                  Outcome::timeout, Outcome::child_died}) {
        INFO(to_string(outcome));
        CHECK(total.count(outcome) == 1);
    }
    const CallCounters& echo_counts = stats.tools().at("echo");
    CHECK(echo_counts.requests == 3);
    CHECK(echo_counts.replies == 1);
    CHECK(echo_counts.tool_errors == 1);
    CHECK(echo_counts.child_died == 1);
    CHECK(stats.tools().at("unlisted").errors == 1);  // "nope" was never listed
    CHECK(stats.tools().at("slow").cancelled == 1);
    CHECK(stats.methods().at("resources/read").timeouts == 1);
    CHECK(stats.methods().size() == 2);  // initialize and notifications are not counted
    CHECK(stats.methods().at("tools/list").replies == 1);
    // The reply's 3 ms is in the bucket up to 5 ms; the timeout's 600 ms in the one up to 1 s.
    CHECK(echo_counts.latency.buckets()[6] == 1);
    CHECK(stats.methods().at("resources/read").latency.percentile_us(99) == 1000000);
    CHECK(total.bytes_in > 0);
    CHECK(total.bytes_out > 0);
    const std::map<SessionId, CallCounters> sessions = session_counters(h.router);
    REQUIRE(sessions.size() == 2);
    CHECK(sessions.at(1).requests == 4);
    CHECK(sessions.at(2).requests == 3);
    // Each session's own: 1 a reply, an isError and a timeout; 2 an error, a cancel, the end.
    CHECK(sessions.at(1).replies == 2);
    CHECK(sessions.at(1).tool_errors == 1);
    CHECK(sessions.at(1).timeouts == 1);
    CHECK(sessions.at(1).latency.count() == 4);
    CHECK(sessions.at(2).errors == 1);
    CHECK(sessions.at(2).cancelled == 1);
    CHECK(sessions.at(2).child_died == 1);
    CHECK(sessions.at(2).in_flight == 0);
    CHECK(stats.sessions_total() == 2);

    CHECK(h.env.settled == std::vector<std::string>{
                               "tools/call echo reply 3000",
                               "tools/call echo tool_error 0",
                               "tools/call nope error 0",
                               "tools/call slow cancelled 0",
                               "resources/read  timeout 600000",
                               "tools/call echo child_died 0",
                           });

    // A session that leaves takes its counters; the totals stay.
    h.router.detach(1);
    CHECK(!session_counters(h.router).contains(1));
    CHECK(stats.total().requests == 7);
}

TEST_CASE("router: the request log is off unless asked for", "[router][stats]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.answer(h.forward(1, call_tool(1, "echo")));
    CHECK(h.router.stats().total().replies == 1);
    CHECK(h.env.settled.empty());
}

TEST_CASE("router: a tool counts by name once the child listed it, pages and all",
          "[router][stats][names]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    // Called before any list: unlisted.
    h.answer(h.forward(1, call_tool(1, "echo")));
    CHECK(h.router.stats().tools().at("unlisted").replies == 1);
    CHECK(!h.router.stats().tools().contains("echo"));

    session_lists_tools(h, 1, {"echo"});
    session_lists_tools(h, 1, {"add"}, "page-2");  // a later page adds to the first
    h.answer(h.forward(1, call_tool(2, "echo")));
    h.answer(h.forward(1, call_tool(3, "add")));
    h.answer(h.forward(1, call_tool(4, "made-up")));
    const TrafficStats& stats = h.router.stats();
    CHECK(stats.tools().at("echo").replies == 1);
    CHECK(stats.tools().at("add").replies == 1);
    CHECK(stats.tools().at("unlisted").replies == 2);
    CHECK(stats.tools().size() == 3);

    // A new first page replaces the list: "add" is gone, its counts stay.
    session_lists_tools(h, 1, {"zap"});
    h.answer(h.forward(1, call_tool(5, "add")));
    h.answer(h.forward(1, call_tool(6, "zap")));
    CHECK(stats.tools().at("add").replies == 2);  // counted apart already: kept
    CHECK(stats.tools().at("zap").replies == 1);
    CHECK(!stats.listed_tools().contains("echo"));
    // An error answer to a list changes nothing.
    const json list = {{"jsonrpc", "2.0"}, {"id", 9}, {"method", "tools/list"}};
    h.answer_error(h.forward(1, list.dump()));
    CHECK(stats.listed_tools().contains("zap"));
}

TEST_CASE("router: a client's name and the request log's names are bounded",
          "[router][stats][names]") {
    RouterHarness h;
    h.router.set_request_log(true);
    h.child_ready();
    h.router.attach(1);
    const std::string huge(100000, 'c');
    const json init = {{"jsonrpc", "2.0"},
                       {"id", 0},
                       {"method", "initialize"},
                       {"params",
                        {{"protocolVersion", "2025-11-25"},
                         {"capabilities", json::object()},
                         {"clientInfo", {{"name", huge}, {"version", huge}}}}}};
    h.send(1, init.dump());
    const std::vector<SessionSummary> summaries = h.router.summaries();
    REQUIRE(summaries.size() == 1);
    CHECK(summaries[0].client_name == std::string(kMaxClientTextBytes, 'c'));
    CHECK(summaries[0].client_version == std::string(kMaxClientTextBytes, 'c'));

    h.send(1, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    h.env.clear_records();
    const std::string tool(50000, 't');
    const std::string method = "x/" + std::string(50000, 'm');
    h.answer_error(h.forward(1, call_tool(1, tool)));
    h.answer_error(h.forward(1, R"({"jsonrpc":"2.0","id":2,"method":")" + method + R"("})"));
    REQUIRE(h.env.settled.size() == 2);
    CHECK(h.env.settled[0] == "tools/call " + std::string(kMaxNameBytes, 't') + " error 0");
    CHECK(h.env.settled[1] == method.substr(0, kMaxNameBytes) + "  error 0");
    CHECK(h.router.stats().methods().at("unlisted").errors == 1);
}
