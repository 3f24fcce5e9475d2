// RequestIds: a session's ids in flight, their child ids and what they cost.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <string_view>

#include "daemon/mux/request_ids.h"

using mcpd::RequestIds;

TEST_CASE("request ids: entries come and go, each with its own id and cost",
          "[router]") {
    RequestIds ids;
    const std::string long_id = '"' + std::string(100000, 'x') + '"';
    ids.set(R"("a")", 1);
    ids.set(long_id, 2, 10);
    CHECK(ids.size() == 2);
    CHECK(ids.bytes() == RequestIds::cost(3, 0) + RequestIds::cost(long_id.size(), 10));
    ids.erase(long_id);
    ids.erase(std::string(R"("a")"));
    CHECK(ids.empty());
    CHECK(ids.bytes() == 0);

    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 20; ++i) ids.set(std::to_string(i), static_cast<std::uint64_t>(100 * round + i));
        REQUIRE(ids.size() == 20);
        CHECK(ids.bytes() == 20 * RequestIds::cost(1, 0) + 10 * (RequestIds::cost(2, 0) - RequestIds::cost(1, 0)));
        for (int i = 0; i < 20; ++i) {
            const auto it = ids.find(std::to_string(i));
            REQUIRE(it != ids.end());
            CHECK(it->second.child_id == static_cast<std::uint64_t>(100 * round + i));
        }
        CHECK_FALSE(ids.contains(long_id));
        CHECK_FALSE(ids.contains(R"("a")"));
        for (int i = 0; i < 20; ++i) ids.erase(std::to_string(i));
        CHECK(ids.empty());
        CHECK(ids.bytes() == 0);
    }

    // An id set again points at the new child id and keeps the cost it was admitted with.
    ids.set("7", 1, 5);
    const std::size_t before = ids.bytes();
    ids.set("7", 9, 500);
    CHECK(ids.bytes() == before);
    CHECK(ids.find("7")->second.child_id == 9);
}

TEST_CASE("request ids hash apart, whatever their length", "[router]") {
    // Counters, quoted strings and ids across the eight-byte words the hash reads.
    const mcpd::RequestIds::Hash hash;
    std::set<std::size_t> seen;
    std::size_t count = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::string padded = std::string(static_cast<std::size_t>(i % 17), 'x');
        for (const std::string& id : {std::to_string(i), "\"" + std::to_string(i) + "\"",
                                      "\"req-" + padded + std::to_string(i) + "\""}) {
            seen.insert(hash(id));
            ++count;
            CHECK(hash(id) == hash(std::string(id)));  // the same text, the same hash
        }
    }
    CHECK(seen.size() == count);
    // A byte that is zero still counts: "1" and "1\0" differ.
    CHECK(hash(std::string_view("1", 1)) != hash(std::string_view("1\0", 2)));
    CHECK(hash(std::string_view("12345678\0", 9)) != hash(std::string_view("12345678", 8)));
}
