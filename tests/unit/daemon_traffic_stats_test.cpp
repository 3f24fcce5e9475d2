// Counting a server's traffic: the latency histogram, its percentiles and merge, the cap on
// names, names counted apart only when the child listed them, and the counters of each outcome.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/mux/traffic_stats.h"

using namespace mcpd;
using namespace std::chrono_literals;

TEST_CASE("latency buckets: each value in the first bucket whose bound holds it", "[stats]") {
    LatencyHistogram h;
    h.add(0);        // bucket 0 (<= 50)
    h.add(50);       // bucket 0
    h.add(51);       // bucket 1 (<= 100)
    h.add(1000);     // bucket 4 (<= 1 ms)
    h.add(1001);     // bucket 5 (<= 2.5 ms)
    h.add(99000000); // +Inf
    const auto& b = h.buckets();
    CHECK(b[0] == 2);
    CHECK(b[1] == 1);
    CHECK(b[4] == 1);
    CHECK(b[5] == 1);
    CHECK(b[LatencyHistogram::kBuckets - 1] == 1);
    CHECK(h.count() == 6);
    CHECK(h.sum_us() == 0 + 50 + 51 + 1000 + 1001 + 99000000);
}

TEST_CASE("latency buckets: the first bound at or above, at every bound and bit width", "[stats]") {
    // The definition, bound by bound, against the table lookup the histogram uses.
    const auto by_definition = [](std::uint64_t us) {
        std::size_t i = 0;
        while (i < LatencyHistogram::kBoundsUs.size() && us > LatencyHistogram::kBoundsUs[i]) ++i;
        return i;
    };
    std::vector<std::uint64_t> values = {0, 1, ~std::uint64_t{0}};
    for (const std::uint64_t bound : LatencyHistogram::kBoundsUs) {
        for (const std::uint64_t v : {bound - 1, bound, bound + 1}) values.push_back(v);
    }
    for (int width = 1; width < 64; ++width) {
        const std::uint64_t power = std::uint64_t{1} << width;
        for (const std::uint64_t v : {power - 1, power, power + 1}) values.push_back(v);
    }
    for (const std::uint64_t v : values) {
        INFO("latency " << v << " µs");
        CHECK(LatencyHistogram::bucket_of(v) == by_definition(v));
    }
    CHECK(LatencyHistogram::bucket_of(50) == 0);
    CHECK(LatencyHistogram::bucket_of(51) == 1);
    CHECK(LatencyHistogram::bucket_of(60000000) == LatencyHistogram::kBuckets - 2);
    CHECK(LatencyHistogram::bucket_of(60000001) == LatencyHistogram::kBuckets - 1);
}

TEST_CASE("percentiles are exact to a bucket", "[stats]") {
    LatencyHistogram h;
    CHECK(h.percentile_us(50) == 0);
    for (int i = 0; i < 90; ++i) h.add(80);      // <= 100 µs
    for (int i = 0; i < 9; ++i) h.add(4000);     // <= 5 ms
    h.add(2000000);                              // <= 2.5 s
    CHECK(h.percentile_us(50) == 100);
    CHECK(h.percentile_us(90) == 100);
    CHECK(h.percentile_us(91) == 5000);
    CHECK(h.percentile_us(99) == 5000);
    CHECK(h.percentile_us(100) == 2500000);
    LatencyHistogram slow;
    slow.add(70000000);
    CHECK(slow.percentile_us(50) == 120000000);  // +Inf: twice the last bound
}

TEST_CASE("histograms of several children merge into the server's", "[stats]") {
    LatencyHistogram a, b;
    for (int i = 0; i < 10; ++i) a.add(30);
    for (int i = 0; i < 10; ++i) b.add(600000);
    LatencyHistogram both;
    both.merge(a);
    both.merge(b);
    CHECK(both.count() == 20);
    CHECK(both.sum_us() == a.sum_us() + b.sum_us());
    CHECK(both.percentile_us(50) == 50);
    CHECK(both.percentile_us(51) == 1000000);
}

namespace {

void child_lists(TrafficStats& stats, std::vector<std::string> names) {
    stats.tools_listed(names, true);
}

}  // namespace

TEST_CASE("each outcome has its counter, in flight goes up and down", "[stats]") {
    TrafficStats stats;
    child_lists(stats, {"echo"});
    CallCounters session;
    const TimePoint now{};
    const Outcome outcomes[] = {Outcome::reply,     Outcome::error,   Outcome::tool_error,
                                Outcome::cancelled, Outcome::timeout, Outcome::child_died,
                                Outcome::replayed};
    for (const Outcome outcome : outcomes) {
        CallCounters* echo = stats.request(session, "tools/call", "echo", 100);
        CHECK(stats.total().in_flight == 1);
        CHECK(session.in_flight == 1);
        stats.answered(echo, &session, outcome, 40, 3ms, now);
        CHECK(stats.total().in_flight == 0);
        CHECK(session.in_flight == 0);
        CHECK(stats.total().count(outcome) == 1);
        CHECK(session.count(outcome) == 1);
    }
    const CallCounters& echo = stats.tools().at("echo");
    CHECK(echo.requests == 7);
    CHECK(echo.bytes_in == 700);
    CHECK(echo.bytes_out == 280);
    CHECK(echo.latency.count() == 7);
    CHECK(echo.latency.percentile_us(50) == 5000);
    CHECK(stats.methods().empty());
    CHECK(to_string(Outcome::tool_error) == "tool_error");
    CHECK(to_string(Outcome::replayed) == "replayed");
    CHECK(session.requests == 7);
    CHECK(session.latency.count() == 7);
    CHECK(session.bytes_out == 280);
}

TEST_CASE("tools are counted by tool, other methods by method, apart", "[stats]") {
    TrafficStats stats;
    child_lists(stats, {"ping"});
    CallCounters s;
    stats.answered(stats.request(s, "tools/call", "ping", 1), &s, Outcome::reply, 1, 1ms, {});
    stats.answered(stats.request(s, "ping", "", 1), &s, Outcome::reply, 1, 1ms, {});
    stats.answered(stats.request(s, "resources/read", "", 1), &s, Outcome::error, 1, 1ms, {});
    CHECK(stats.tools().size() == 1);
    CHECK(stats.tools().at("ping").replies == 1);
    CHECK(stats.methods().size() == 2);
    CHECK(stats.methods().at("ping").replies == 1);
    CHECK(stats.methods().at("resources/read").errors == 1);
}

TEST_CASE("names are capped per server, the totals are the names' sum", "[stats]") {
    TrafficStats stats;
    CallCounters s;
    // A server whose list changes again and again: only its own names, and only so many.
    for (std::size_t i = 0; i < TrafficStats::kMaxNames + 50; ++i) {
        const std::string name = "tool_" + std::to_string(i);
        child_lists(stats, {name});
        stats.answered(stats.request(s, "tools/call", name, 1), &s, Outcome::reply, 1, 1ms, {});
    }
    CHECK(stats.tools().size() == TrafficStats::kMaxNames + 1);
    CHECK(stats.tools().at("other").requests == 50);
    CHECK(stats.tools().at("tool_0").requests == 1);  // names seen first keep their own
    CHECK(stats.total().requests == TrafficStats::kMaxNames + 50);
    // Methods share the cap.
    stats.request(s, "prompts/get", "", 1);
    CHECK(stats.methods().at("other").requests == 1);
    CHECK(stats.total().requests == TrafficStats::kMaxNames + 51);
    CHECK(s.requests == TrafficStats::kMaxNames + 51);
    // The unlisted entry is there even past the cap.
    stats.request(s, "tools/call", "never-listed", 1);
    CHECK(stats.tools().at("unlisted").requests == 1);
    // An answer for a session that left (no counters of its any more) still counts in the
    // totals.
    CallCounters* echo = stats.request(s, "tools/call", "echo", 1);
    stats.answered(echo, nullptr, Outcome::cancelled, 0, 1ms, {});
    CHECK(stats.total().cancelled == 1);
    CHECK(s.cancelled == 0);
}

TEST_CASE("a name the child never listed is counted as unlisted, and fills nothing",
          "[stats][names]") {
    TrafficStats stats;
    CallCounters s;
    // Before any list every tool is unlisted; so is any method MCP does not have.
    stats.request(s, "tools/call", "echo", 1);
    stats.request(s, "no/such/method", "", 1);
    CHECK(stats.tools().size() == 1);
    CHECK(stats.tools().at("unlisted").requests == 1);
    CHECK(stats.methods().size() == 1);
    CHECK(stats.methods().at("unlisted").requests == 1);

    // A client that calls a flood of made-up names, each as long as a message may be: one
    // entry, no memory per name, and the server's real tools keep names of their own after.
    const std::string long_tail(64 * 1024, 'x');
    for (int i = 0; i < 5000; ++i) {
        const std::string made_up = std::to_string(i) + (i % 2 == 0 ? long_tail : std::string("t"));
        stats.request(s, "tools/call", made_up, 1);
        stats.request(s, "method/" + std::to_string(i), "", 1);
    }
    CHECK(stats.tools().size() == 1);
    CHECK(stats.methods().size() == 1);
    CHECK(stats.tools().at("unlisted").requests == 5001);
    child_lists(stats, {"echo", "add"});
    stats.request(s, "tools/call", "echo", 1);
    stats.request(s, "tools/call", "add", 1);
    stats.request(s, "tools/call", "echo", 1);
    CHECK(stats.tools().at("echo").requests == 2);
    CHECK(stats.tools().at("add").requests == 1);
    CHECK(!stats.tools().contains("other"));
    CHECK(stats.methods().size() == 1);
    stats.request(s, "tools/list", "", 1);
    CHECK(stats.methods().at("tools/list").requests == 1);

    // A first page replaces the list, a later page adds to it.
    child_lists(stats, {"add"});
    stats.request(s, "tools/call", "zap", 1);
    CHECK(stats.tools().at("unlisted").requests == 5002);
    stats.tools_listed(std::vector<std::string>{"zap"}, false);
    stats.request(s, "tools/call", "zap", 1);
    CHECK(stats.tools().at("zap").requests == 1);
    CHECK(stats.listed_tools().contains("add"));
    CHECK(!stats.listed_tools().contains("echo"));
}

TEST_CASE("a child that is gone leaves its counts to the server's", "[stats]") {
    TrafficStats gone, kept;
    child_lists(gone, {"echo"});
    child_lists(kept, {"echo"});
    CallCounters s;
    gone.attached();
    kept.attached();
    gone.answered(gone.request(s, "tools/call", "echo", 10), &s, Outcome::reply, 5, 2ms, {});
    gone.answered(gone.request(s, "tools/list", "", 10), &s, Outcome::reply, 5, 2ms, {});
    kept.answered(kept.request(s, "tools/call", "echo", 10), &s, Outcome::error, 5, 20ms, {});
    kept.absorb(gone);
    CHECK(kept.total().requests == 3);
    CHECK(kept.tools().at("echo").requests == 2);
    CHECK(kept.tools().at("echo").latency.count() == 2);
    CHECK(kept.methods().at("tools/list").replies == 1);
    CHECK(kept.total().errors == 1);
    CHECK(kept.sessions_total() == 2);
}

TEST_CASE("calls per second over the last ten seconds", "[stats]") {
    RecentRate rate;
    const TimePoint start{std::chrono::seconds(1000)};
    for (int i = 0; i < 20; ++i) rate.add(start);
    for (int i = 0; i < 10; ++i) rate.add(start + std::chrono::seconds(5));
    CHECK(rate.per_second(start + std::chrono::seconds(5)) == Approx(3.0));
    CHECK(rate.per_second(start + std::chrono::seconds(9)) == Approx(3.0));
    CHECK(rate.per_second(start + std::chrono::seconds(10)) == Approx(1.0));  // the first second left
    CHECK(rate.per_second(start + std::chrono::seconds(15)) == Approx(0.0));
    // A slot is reused for a later second, not added to.
    rate.add(start + std::chrono::seconds(20));
    CHECK(rate.per_second(start + std::chrono::seconds(20)) == Approx(0.1));
}
