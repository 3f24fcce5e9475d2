#include "common/indexed_map.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using mcpd::IndexedMap;

TEST_CASE("indexed map: walked in key order, found by hash, in step through erases",
          "[indexed_map]") {
    IndexedMap<int, std::string> map;
    for (const int key : {5, 1, 9, 3}) map[key] = "v" + std::to_string(key);
    std::vector<int> order;
    for (const auto& [key, value] : map) order.push_back(key);
    CHECK(order == std::vector<int>{1, 3, 5, 9});
    CHECK(map.size() == 4);

    REQUIRE(map.lookup(9) != nullptr);
    CHECK(*map.lookup(9) == "v9");
    CHECK(map.lookup(9) == &map.at(9));  // the entry itself, not a copy
    CHECK(map.lookup(4) == nullptr);
    CHECK(map.contains(3));

    // An entry stays where it is while others come and go.
    std::string* three = map.lookup(3);
    for (int key = 100; key < 200; ++key) map[key] = "x";
    CHECK(map.lookup(3) == three);

    CHECK(map.erase(3) == 1);
    CHECK(map.lookup(3) == nullptr);
    CHECK_FALSE(map.contains(3));
    CHECK(map.erase(3) == 0);
    const auto after = map.erase(map.find(5));
    CHECK(after->first == 9);  // the next in order, as std::map gives it
    CHECK(map.lookup(5) == nullptr);

    // operator[] on a present key keeps its entry and its index.
    map[9] += "!";
    CHECK(*map.lookup(9) == "v9!");

    map.clear();
    CHECK(map.empty());
    CHECK(map.lookup(1) == nullptr);
    map[1] = "again";
    CHECK(*map.lookup(1) == "again");
}
