// Router: what each forwarded request counts as in its traffic stats (docs/STATS.md), for every
// way a request can end, and the request log's records of them.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "fake_router_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using namespace std::chrono_literals;

namespace {

std::string call_tool(int id, const std::string& tool) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":")" + tool + R"(","arguments":{}}})";
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
    CHECK(total.requests == 6);
    CHECK(total.in_flight == 0);
    for (const Outcome outcome : {Outcome::reply, Outcome::error, Outcome::tool_error,
                                  Outcome::cancelled, Outcome::timeout, Outcome::child_died}) {
        INFO(to_string(outcome));
        CHECK(total.count(outcome) == 1);
    }
    const CallCounters& echo_counts = stats.tools().at("echo");
    CHECK(echo_counts.requests == 3);
    CHECK(echo_counts.replies == 1);
    CHECK(echo_counts.tool_errors == 1);
    CHECK(echo_counts.child_died == 1);
    CHECK(stats.tools().at("nope").errors == 1);
    CHECK(stats.tools().at("slow").cancelled == 1);
    CHECK(stats.methods().at("resources/read").timeouts == 1);
    CHECK(stats.methods().size() == 1);  // initialize and notifications are not counted
    // The reply's 3 ms is in the bucket up to 5 ms; the timeout's 600 ms in the one up to 1 s.
    CHECK(echo_counts.latency.buckets()[6] == 1);
    CHECK(stats.methods().at("resources/read").latency.percentile_us(99) == 1000000);
    CHECK(total.bytes_in > 0);
    CHECK(total.bytes_out > 0);
    const std::map<SessionId, CallCounters> sessions = session_counters(h.router);
    REQUIRE(sessions.size() == 2);
    CHECK(sessions.at(1).requests == 3);
    CHECK(sessions.at(2).requests == 3);
    // Each session's own: 1 a reply, an isError and a timeout; 2 an error, a cancel, the end.
    CHECK(sessions.at(1).replies == 1);
    CHECK(sessions.at(1).tool_errors == 1);
    CHECK(sessions.at(1).timeouts == 1);
    CHECK(sessions.at(1).latency.count() == 3);
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
    CHECK(stats.total().requests == 6);
}

TEST_CASE("router: the request log is off unless asked for", "[router][stats]") {
    RouterHarness h;
    h.child_ready();
    h.connect(1);
    h.answer(h.forward(1, call_tool(1, "echo")));
    CHECK(h.router.stats().total().replies == 1);
    CHECK(h.env.settled.empty());
}
