#include <catch2/catch.hpp>
#include <chrono>

#include "common/log.h"
#include "common/log_limits.h"

using namespace mcpd::log;
using namespace std::chrono_literals;

TEST_CASE("log limits: a source over its rate is counted, and the count falls due", "[log]") {
    SourceRates rates(/*rate=*/10, /*burst=*/5);
    const mcpd::TimePoint t0 = mcpd::Clock::now();
    for (int i = 0; i < 5; ++i) CHECK(rates.admit("flood", t0));
    for (int i = 0; i < 7; ++i) CHECK_FALSE(rates.admit("flood", t0));
    CHECK(rates.admit("quiet", t0));  // each source has its own budget

    // Nothing held back for a second yet: the first count is due at once.
    REQUIRE(rates.next_due());
    auto due = rates.take_due(t0);
    REQUIRE(due.size() == 1);
    CHECK(due[0].source == "flood");
    CHECK(due[0].lines == 7);
    CHECK_FALSE(rates.next_due());

    // The flood goes on: the next count is due a second after the last, even if the source
    // says nothing more (the end of a flood is reported when it ends).
    CHECK_FALSE(rates.admit("flood", t0 + 10ms));
    CHECK(rates.take_due(t0 + 500ms).empty());
    REQUIRE(rates.next_due());
    CHECK(*rates.next_due() == t0 + 1s);
    due = rates.take_due(t0 + 1s);
    REQUIRE(due.size() == 1);
    CHECK(due[0].lines == 1);

    // Refilled at its rate.
    CHECK(rates.admit("flood", t0 + 2s));
}

TEST_CASE("log limits: a repeated event is written once a window, the rest counted", "[log]") {
    RepeatFolder folder(10s);
    const mcpd::TimePoint t0 = mcpd::Clock::now();
    CHECK(folder.first("demo", "stray reply", t0));
    for (int i = 0; i < 49; ++i) CHECK_FALSE(folder.first("demo", "stray reply", t0 + 1s));
    CHECK(folder.first("demo", "declined", t0 + 1s));   // another kind
    CHECK(folder.first("other", "stray reply", t0 + 1s));  // another source
    REQUIRE(folder.next_due());
    CHECK(*folder.next_due() == t0 + 10s);
    CHECK(folder.take_due(t0 + 9s).empty());

    auto due = folder.take_due(t0 + 10s);
    REQUIRE(due.size() == 1);
    CHECK(due[0].source == "demo");
    CHECK(due[0].kind == "stray reply");
    CHECK(due[0].count == 49);

    // Counting goes on in the next window; a quiet window forgets the kind.
    CHECK_FALSE(folder.first("demo", "stray reply", t0 + 12s));
    due = folder.take_due(t0 + 20s);
    REQUIRE(due.size() == 1);
    CHECK(due[0].count == 1);
    CHECK(folder.take_due(t0 + 31s).empty());
    CHECK_FALSE(folder.next_due());
    CHECK(folder.first("demo", "stray reply", t0 + 32s));
}

TEST_CASE("log: an excerpt keeps the start of a peer's text and its length", "[log]") {
    CHECK(excerpt("short") == "short");
    const std::string id(1 << 20, 'x');
    const std::string cut = excerpt(id);
    CHECK(cut.size() < 100);
    CHECK(cut.starts_with(std::string(64, 'x') + "..."));
    CHECK(cut.ends_with("(1048576 bytes)"));
}
