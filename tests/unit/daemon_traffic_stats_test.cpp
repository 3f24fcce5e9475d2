// Counting a server's traffic: the latency histogram, its percentiles and merge, the cap on
// names, and the counters of each outcome.
#include <catch2/catch.hpp>

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

TEST_CASE("each outcome has its counter; in flight goes up and down", "[stats]") {
    TrafficStats stats;
    const Outcome outcomes[] = {Outcome::reply,     Outcome::error,   Outcome::tool_error,
                                Outcome::cancelled, Outcome::timeout, Outcome::child_died};
    for (const Outcome outcome : outcomes) {
        stats.request(1, "echo", 100);
        CHECK(stats.total().in_flight == 1);
        stats.answered(1, "echo", outcome, 40, 3ms);
        CHECK(stats.total().in_flight == 0);
        CHECK(stats.total().count(outcome) == 1);
    }
    const CallCounters& echo = stats.by_name().at("echo");
    CHECK(echo.requests == 6);
    CHECK(echo.bytes_in == 600);
    CHECK(echo.bytes_out == 240);
    CHECK(echo.latency.count() == 6);
    CHECK(echo.latency.percentile_us(50) == 5000);
    CHECK(to_string(Outcome::tool_error) == "tool_error");
    REQUIRE(stats.session(1) != nullptr);
    CHECK(stats.session(1)->requests == 6);
}

TEST_CASE("names are capped per server; a session that left keeps no counters", "[stats]") {
    TrafficStats stats;
    for (std::size_t i = 0; i < TrafficStats::kMaxNames + 50; ++i) {
        const std::string name = "tool_" + std::to_string(i);
        stats.request(7, name, 1);
        stats.answered(7, name, Outcome::reply, 1, 1ms);
    }
    CHECK(stats.by_name().size() == TrafficStats::kMaxNames + 1);
    CHECK(stats.by_name().at("other").requests == 50);
    CHECK(stats.by_name().at("tool_0").requests == 1);  // names seen first keep their own
    CHECK(stats.total().requests == TrafficStats::kMaxNames + 50);
    stats.forget(7);
    CHECK(stats.session(7) == nullptr);
    CHECK(stats.by_session().empty());
    CHECK(stats.total().requests == TrafficStats::kMaxNames + 50);
    // An answer for a session that left still counts in the totals.
    stats.request(8, "echo", 1);
    stats.forget(8);
    stats.answered(8, "echo", Outcome::cancelled, 0, 1ms);
    CHECK(stats.total().cancelled == 1);
    CHECK(stats.by_session().empty());
}
