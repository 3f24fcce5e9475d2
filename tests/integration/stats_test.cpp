// Traffic statistics end to end: a known mix of calls through two sessions, counted exactly by
// `mcpctl stats`, and the request log that names each call but never its arguments.
#include <unistd.h>

#include <set>

#include <catch2/catch.hpp>

#include "harness.h"
#include "mcp_session.h"

using namespace integration;
using json = nlohmann::json;

namespace {

json stats_of(const TestEnv& env, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"--json", "stats"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult run = env.ctl(args);
    INFO(run.describe());
    REQUIRE(run.exit_code == 0);
    const json parsed = json::parse(run.out, nullptr, false);
    REQUIRE(parsed.is_object());
    return parsed;
}

const json& server_in(const json& stats, const std::string& name) {
    for (const json& server : stats.at("servers"))
        if (server.at("name") == name) return server;
    FAIL("no server " << name << " in " << stats.dump());
    throw std::logic_error("unreachable");
}

const json& tool_in(const json& server, const std::string& tool) {
    for (const json& entry : server.at("tools"))
        if (entry.at("tool") == tool) return entry;
    FAIL("no tool " << tool << " in " << server.at("tools").dump());
    throw std::logic_error("unreachable");
}

const json& session_in(const json& server, std::uint64_t id) {
    for (const json& entry : server.at("sessions_detail"))
        if (entry.at("id") == id) return entry;
    FAIL("no session " << id << " in " << server.at("sessions_detail").dump());
    throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("stats count a known mix of calls exactly, per tool, per session and in all",
          "[stats]") {
    TestEnv env("stats-mix");
    env.write_registry("[daemon]\nrequest_log = true\n\n" + server_toml("demo") +
                       server_toml("timed", {}, {{"request_timeout", "\"300ms\""},
                                                 {"request_log", "false"}}));
    env.start_daemon();
    env.wait_state("demo", "running");
    env.wait_state("timed", "running");

    McpSession alpha(env.socket(), "demo");
    alpha.initialize("alpha-client");
    McpSession beta(env.socket(), "demo");
    beta.initialize("beta-client");
    // alpha lists the tools, as an agent does first: a tool is counted by name once listed.
    CHECK(alpha.wait_response(alpha.request("tools/list")).json["result"]["tools"].is_array());

    // alpha: three replies, one tool error, one JSON-RPC error (an unknown tool, which counts as
    // "unlisted").
    for (int i = 0; i < 3; ++i) {
        CHECK_FALSE(alpha.wait_response(alpha.call_tool("echo", {{"text", "s3cret-argument"}})).is_error());
    }
    const McpMessage failed = alpha.wait_response(
        alpha.call_tool("echo", {{"text", "tool says no"}, {"is_error", true}}));
    CHECK(failed.json["result"]["isError"] == true);
    CHECK(alpha.wait_response(alpha.call_tool("nope", json::object())).error_code() == -32602);

    // beta: two replies, one slow call (in the 500 ms .. 1 s bucket), one cancelled call.
    for (int i = 0; i < 2; ++i) {
        CHECK_FALSE(beta.wait_response(beta.call_tool("echo", {{"text", "hello"}})).is_error());
    }
    CHECK_FALSE(beta.wait_response(beta.call_tool("slow", {{"steps", 1}, {"interval_ms", 600}}), 10s)
                    .is_error());
    const json cancelled = beta.call_tool("slow", {{"steps", 100}, {"interval_ms", 100}});
    beta.notify("notifications/cancelled", {{"requestId", cancelled}, {"reason", "test"}});

    // timed: one call that runs out of request_timeout, one whose server dies under it.
    McpSession gamma(env.socket(), "timed");
    gamma.initialize("gamma-client");
    CHECK(gamma.wait_response(gamma.call_tool("slow", {{"steps", 1}, {"interval_ms", 5000}}), 10s)
              .is_error());
    CHECK(gamma.wait_response(gamma.call_tool("crash", {{"code", 3}}), 10s).is_error());
    env.wait_state("timed", "running");

    json stats;
    wait_until("the cancelled call is settled", 10s, [&] {
        stats = stats_of(env, {"--tools", "--sessions"});
        return server_in(stats, "demo")["totals"]["in_flight"] == 0;
    });
    INFO(stats.dump(2));
    const json& demo = server_in(stats, "demo");
    const json& totals = demo.at("totals");
    CHECK(totals["requests"] == 10);
    CHECK(totals["replies"] == 7);
    CHECK(totals["tool_errors"] == 1);
    CHECK(totals["errors"] == 1);
    CHECK(totals["cancelled"] == 1);
    CHECK(totals["timeouts"] == 0);
    CHECK(totals["child_died"] == 0);
    CHECK(totals["latency"]["count"] == 10);
    CHECK(totals["bytes_in"].get<std::uint64_t>() > 0);
    CHECK(totals["bytes_out"].get<std::uint64_t>() > 0);

    const json& echo = tool_in(demo, "echo");
    CHECK(echo["method"] == "tools/call");
    CHECK(echo["requests"] == 6);
    CHECK(echo["replies"] == 5);
    CHECK(echo["tool_errors"] == 1);
    CHECK(tool_in(demo, "unlisted")["errors"] == 1);  // "nope", which the server never listed
    const json& slow = tool_in(demo, "slow");
    CHECK(slow["requests"] == 2);
    CHECK(slow["replies"] == 1);
    CHECK(slow["cancelled"] == 1);
    // 600 ms lands in the bucket up to 1 s, and is the slowest call: the p99 of the tool's.
    std::uint64_t in_bucket = 0;
    for (const json& bucket : slow["latency"]["buckets"])
        if (bucket[0] == 1000000) in_bucket = bucket[1].get<std::uint64_t>();
    CHECK(in_bucket == 1);
    CHECK(totals["latency"]["p99_us"] == 1000000);
    CHECK(echo["latency"]["p99_us"].get<std::uint64_t>() < 500000);

    CHECK(demo["sessions"] == 2);
    CHECK(demo["sessions_total"] == 2);
    CHECK(demo["children"] == 1);
    CHECK(demo["rss_bytes"].get<std::uint64_t>() > 0);
    CHECK(demo["cpu_ms"].is_number());
    CHECK(demo["calls_per_s_10s"].get<double>() > 0);
    const json& a = session_in(demo, alpha.session_id());
    CHECK(a["requests"] == 6);
    CHECK(a["client"]["name"] == "alpha-client");
    CHECK(a["pid"] == ::getpid());
    CHECK(a["uid"] == ::getuid());
    const json& b = session_in(demo, beta.session_id());
    CHECK(b["requests"] == 4);
    CHECK(b["cancelled"] == 1);
    CHECK(b["client"]["name"] == "beta-client");

    const json& timed = server_in(stats, "timed");
    CHECK(timed["totals"]["requests"] == 2);
    CHECK(timed["totals"]["timeouts"] == 1);
    CHECK(timed["totals"]["child_died"] == 1);
    CHECK(timed["restarts"] == 1);
    CHECK(timed["restart_reasons"]["exit 3"] == 1);

    // Asking for one server gives that one; without --tools and --sessions, no breakdown.
    const json only = stats_of(env, {"timed"});
    REQUIRE(only["servers"].size() == 1);
    CHECK_FALSE(only["servers"][0].contains("tools"));
    CHECK_FALSE(only["servers"][0].contains("sessions_detail"));

    // A session that left keeps no counters; the server's totals keep what it did.
    alpha.close_write();
    CHECK(alpha.wait_closed(10s));
    wait_until("alpha is gone from the stats", 10s, [&] {
        const json after = stats_of(env, {"--sessions"});
        return server_in(after, "demo")["sessions_detail"].size() == 1;
    });
    CHECK(server_in(stats_of(env), "demo")["totals"]["requests"] == 10);

    // The request log: demo's calls, named, with their outcomes; never their arguments; none
    // of timed's, whose own request_log is false.
    const std::string log = env.daemon_log();
    CHECK(count_of(log, "[demo] request session=") == 10);
    CHECK(count_of(log, "client=alpha-client method=tools/call tool=echo outcome=reply") == 3);
    CHECK(count_of(log, "tool=echo outcome=tool_error") == 1);
    CHECK(count_of(log, "tool=nope outcome=error") == 1);
    CHECK(count_of(log, "tool=slow outcome=cancelled") == 1);
    CHECK(count_of(log, "s3cret-argument") == 0);
    CHECK(count_of(log, "[timed] request ") == 0);
}

TEST_CASE("a server with a process per session breaks its counts down per child", "[stats]") {
    TestEnv env("stats-children");
    env.write_registry(server_toml("private", {}, {{"sharing", "\"exclusive\""}}));
    env.start_daemon();

    McpSession one(env.socket(), "private");
    one.initialize("one-client");
    McpSession two(env.socket(), "private");
    two.initialize("two-client");
    for (int i = 0; i < 3; ++i)
        CHECK_FALSE(one.wait_response(one.call_tool("echo", {{"text", "a"}})).is_error());
    CHECK(two.wait_response(two.call_tool("nope", json::object())).error_code() == -32602);

    CHECK_FALSE(server_in(stats_of(env, {"private"}), "private").contains("per_child"));
    const json server = server_in(stats_of(env, {"private", "--children"}), "private");
    INFO(server.dump(2));
    CHECK(server["children"] == 2);
    CHECK(server["totals"]["requests"] == 4);
    const json& children = server.at("per_child");
    REQUIRE(children.size() == 2);
    std::multiset<std::pair<std::uint64_t, std::uint64_t>> replies_and_errors;
    std::set<int> pids;
    for (const json& child : children) {
        CHECK(child["kind"] == "exclusive");
        CHECK(child["sessions"] == 1);
        CHECK(child["state"] == "running");
        CHECK(child["rss_bytes"].get<std::uint64_t>() > 0);
        pids.insert(child["pid"].get<int>());
        replies_and_errors.insert({child["totals"]["replies"].get<std::uint64_t>(),
                                   child["totals"]["errors"].get<std::uint64_t>()});
    }
    CHECK(pids.size() == 2);
    // Each child counted its own session's calls: three replies at one, an error at the other.
    CHECK(replies_and_errors == std::multiset<std::pair<std::uint64_t, std::uint64_t>>{{3, 0}, {0, 1}});
}
