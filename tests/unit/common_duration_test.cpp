#include <catch2/catch.hpp>

#include "common/duration.h"

using mcpd::Duration;
using mcpd::format_age;
using mcpd::format_duration;
using mcpd::parse_duration;
using namespace std::chrono_literals;

TEST_CASE("parse_duration reads every unit", "[duration]") {
    CHECK(parse_duration("0ms") == Duration(0));
    CHECK(parse_duration("500ms") == Duration(500));
    CHECK(parse_duration("2s") == Duration(2000));
    CHECK(parse_duration("5m") == Duration(300'000));
    CHECK(parse_duration("1h") == Duration(3'600'000));
    CHECK(parse_duration("0s") == Duration(0));
    CHECK(parse_duration("007s") == Duration(7000));
}

TEST_CASE("parse_duration adds composite parts", "[duration]") {
    CHECK(parse_duration("1m30s") == Duration(90'000));
    CHECK(parse_duration("1h2m3s4ms") == Duration(3'723'004));
    CHECK(parse_duration("1s500ms") == Duration(1500));
    CHECK(parse_duration("2h0m") == Duration(7'200'000));
}

TEST_CASE("parse_duration rejects everything else", "[duration]") {
    const char* const rejected[] = {
        "",   "5",    "-1s",  "+1s", "1.5s", "5 m", " 5m", "5m ", "1x",    "s",    "ms",   "1S",
        "1M", "1sec", "1min", "1d",  "1us",  "1m-", "1m5", "1hh", "1m 5s", "1mss", "0x5s", "5s\n",
    };
    for (const char* text : rejected) {
        INFO("input: \"" << text << "\"");
        CHECK_FALSE(parse_duration(text).has_value());
    }
}

TEST_CASE("parse_duration rejects overflow", "[duration]") {
    // The largest count of milliseconds is 9223372036854775807.
    CHECK(parse_duration("9223372036854775807ms") == Duration(9'223'372'036'854'775'807));
    CHECK_FALSE(parse_duration("9223372036854775808ms").has_value());
    CHECK_FALSE(parse_duration("99999999999999999999999s").has_value());
    CHECK(parse_duration("9223372036854775s") == Duration(9'223'372'036'854'775'000));
    CHECK_FALSE(parse_duration("9223372036854776s").has_value());  // fits as a number, not in ms
    CHECK(parse_duration("2562047788015h").has_value());
    CHECK_FALSE(parse_duration("2562047788016h").has_value());
    CHECK_FALSE(parse_duration("9223372036854775807ms1ms").has_value());  // the sum overflows
}

TEST_CASE("format_duration writes the shortest exact form", "[duration]") {
    CHECK(format_duration(0ms) == "0s");
    CHECK(format_duration(1ms) == "1ms");
    CHECK(format_duration(500ms) == "500ms");
    CHECK(format_duration(1500ms) == "1500ms");
    CHECK(format_duration(2s) == "2s");
    CHECK(format_duration(60s) == "1m");
    CHECK(format_duration(90s) == "1m30s");
    CHECK(format_duration(1h) == "1h");
    CHECK(format_duration(1h + 5s) == "1h5s");
    CHECK(format_duration(1h + 2min + 3s) == "1h2m3s");
    CHECK(format_duration(1min + 1500ms) == "1m1500ms");
    CHECK(format_duration(48h) == "48h");
}

TEST_CASE("format_duration and parse_duration round-trip", "[duration]") {
    const Duration samples[] = {0ms,       1ms, 999ms, 1s,  1001ms,   59s,        61s,
                                3599999ms, 1h,  25h,   90s, 1h + 1ms, 123456789ms};
    for (const Duration d : samples) {
        INFO("ms: " << d.count() << " text: " << format_duration(d));
        CHECK(parse_duration(format_duration(d)) == d);
    }
    for (const char* text : {"1m30s", "500ms", "2h", "1h1ms", "1500ms"}) {
        CHECK(format_duration(*parse_duration(text)) == text);
    }
}

TEST_CASE("format_age picks the unit for a table and rounds", "[duration]") {
    CHECK(format_age(0ms) == "0ms");
    CHECK(format_age(850ms) == "850ms");
    CHECK(format_age(999ms) == "999ms");
    CHECK(format_age(1000ms) == "1s");
    CHECK(format_age(1499ms) == "1s");
    CHECK(format_age(1500ms) == "2s");
    CHECK(format_age(12s) == "12s");
    CHECK(format_age(59499ms) == "59s");
    CHECK(format_age(59500ms) == "1m00s");  // rounding carries into the next unit
    CHECK(format_age(5min + 3s) == "5m03s");
    CHECK(format_age(5min + 3s + 600ms) == "5m04s");
    CHECK(format_age(59min + 59s) == "59m59s");
    CHECK(format_age(3599500ms) == "1h00m");
    CHECK(format_age(2h + 14min) == "2h14m");
    CHECK(format_age(2h + 14min + 29s) == "2h14m");
    CHECK(format_age(2h + 14min + 30s) == "2h15m");
    CHECK(format_age(23h + 59min + 30s) == "1d00h");
    CHECK(format_age(3 * 24h + 4h) == "3d04h");
    CHECK(format_age(3 * 24h + 4h + 31min) == "3d05h");
    CHECK(format_age(400 * 24h) == "400d00h");
    CHECK(format_age(-5s) == "0ms");
}
