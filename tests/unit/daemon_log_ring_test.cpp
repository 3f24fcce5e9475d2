#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/server/log_ring.h"

using mcpd::LogRing;
using RingLines = std::vector<std::string>;

TEST_CASE("log ring keeps at most max_lines, dropping the oldest") {
    LogRing ring(3, 1024);
    for (const char* line : {"one", "two", "three", "four", "five"}) ring.append(line);
    CHECK(ring.lines() == 3);
    CHECK(ring.bytes() == 13);
    CHECK(ring.tail(10) == RingLines{"three", "four", "five"});
}

TEST_CASE("log ring keeps at most max_bytes, dropping the oldest") {
    LogRing ring(100, 10);
    ring.append("aaaa");
    ring.append("bbbb");
    CHECK(ring.bytes() == 8);
    ring.append("cccc");
    CHECK(ring.lines() == 2);
    CHECK(ring.bytes() == 8);
    CHECK(ring.tail(10) == RingLines{"bbbb", "cccc"});
    ring.append("dd");
    CHECK(ring.bytes() == 10);
    CHECK(ring.tail(10) == RingLines{"bbbb", "cccc", "dd"});
}

TEST_CASE("log ring never holds more than max_bytes, even for one long line") {
    LogRing ring(100, 10);
    std::vector<std::string> followed;
    ring.follow([&](std::string_view line) { followed.emplace_back(line); });
    ring.append("short");
    ring.append(std::string(25, 'x'));
    CHECK(ring.bytes() <= 10);
    // Followers still see every line as it was written.
    CHECK(followed == RingLines{"short", std::string(25, 'x')});
}

TEST_CASE("log ring tail returns the last lines, oldest first") {
    LogRing ring(10, 1024);
    CHECK(ring.tail(5).empty());
    for (const char* line : {"a", "b", "c", "d"}) ring.append(line);
    CHECK(ring.tail(0).empty());
    CHECK(ring.tail(1) == RingLines{"d"});
    CHECK(ring.tail(3) == RingLines{"b", "c", "d"});
    CHECK(ring.tail(4) == RingLines{"a", "b", "c", "d"});
    CHECK(ring.tail(1000) == RingLines{"a", "b", "c", "d"});
    ring.append("");
    CHECK(ring.tail(2) == RingLines{"d", ""});
}

TEST_CASE("log ring calls every follower with each new line until it unfollows") {
    LogRing ring(10, 1024);
    ring.append("before");
    RingLines first, second;
    const std::uint64_t a = ring.follow([&](std::string_view line) { first.emplace_back(line); });
    const std::uint64_t b = ring.follow([&](std::string_view line) { second.emplace_back(line); });
    CHECK(a != b);
    ring.append("x");
    ring.append("y");
    ring.unfollow(a);
    ring.append("z");
    CHECK(first == RingLines{"x", "y"});
    CHECK(second == RingLines{"x", "y", "z"});
    ring.unfollow(a);  // twice is harmless
    ring.unfollow(b);
    ring.append("w");
    CHECK(second == RingLines{"x", "y", "z"});
    CHECK(ring.tail(10) == RingLines{"before", "x", "y", "z", "w"});
}

TEST_CASE("log ring lets a follower unfollow itself or another inside the callback") {
    LogRing ring(10, 1024);
    RingLines self_seen, victim_seen, added_seen;
    std::uint64_t self = 0, victim = 0;
    SECTION("itself") {
        self = ring.follow([&](std::string_view line) {
            self_seen.emplace_back(line);
            ring.unfollow(self);
        });
        ring.append("one");
        ring.append("two");
        CHECK(self_seen == RingLines{"one"});
    }
    SECTION("a later follower") {
        self = ring.follow([&](std::string_view line) {
            self_seen.emplace_back(line);
            ring.unfollow(victim);
        });
        victim = ring.follow([&](std::string_view line) { victim_seen.emplace_back(line); });
        ring.append("one");
        ring.append("two");
        CHECK(self_seen == RingLines{"one", "two"});
        CHECK(victim_seen.empty());
    }
    SECTION("a follower added inside the callback starts with the next line") {
        self = ring.follow([&](std::string_view line) {
            self_seen.emplace_back(line);
            if (self_seen.size() == 1) {
                ring.follow([&](std::string_view l) { added_seen.emplace_back(l); });
            }
        });
        ring.append("one");
        ring.append("two");
        CHECK(self_seen == RingLines{"one", "two"});
        CHECK(added_seen == RingLines{"two"});
    }
    CHECK(ring.tail(10) == RingLines{"one", "two"});
}

TEST_CASE("log ring follower ids are unique across rings") {
    LogRing first(10, 1024), second(10, 1024);
    RingLines seen_first, seen_second;
    const std::uint64_t a =
        first.follow([&](std::string_view line) { seen_first.emplace_back(line); });
    const std::uint64_t b =
        second.follow([&](std::string_view line) { seen_second.emplace_back(line); });
    CHECK(a != b);
    // A stale id from one ring never removes another ring's follower.
    second.unfollow(a);
    first.unfollow(b);
    first.append("1");
    second.append("2");
    CHECK(seen_first == RingLines{"1"});
    CHECK(seen_second == RingLines{"2"});
}
