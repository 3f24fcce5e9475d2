// FlatStringMap: a flat hash map from short strings, checked against std::unordered_map.
#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/flat_string_map.h"

namespace {

// A hash with many collisions, so that probes run long and erasures shift entries back.
struct FewBuckets {
    std::size_t operator()(std::string_view key) const {
        return key.empty() ? 0 : static_cast<unsigned char>(key.back()) % 3;
    }
};
// The standard hash, for the common case.
struct Standard {
    std::size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
};

template <typename Hash>
void check_same(const mcpd::FlatStringMap<std::uint64_t, Hash>& flat,
                const std::unordered_map<std::string, std::uint64_t>& model) {
    REQUIRE(flat.size() == model.size());
    CHECK(flat.empty() == model.empty());
    std::map<std::string, std::uint64_t> walked;
    for (const auto& [key, value] : flat) CHECK(walked.emplace(key, value).second);
    CHECK(walked == std::map<std::string, std::uint64_t>(model.begin(), model.end()));
    for (const auto& [key, value] : model) {
        const auto it = flat.find(key);
        REQUIRE(it != flat.end());
        CHECK(it->second == value);
        CHECK(flat.contains(key));
    }
}

template <typename Hash>
void random_operations(std::uint32_t seed, int keys) {
    mcpd::FlatStringMap<std::uint64_t, Hash> flat;
    std::unordered_map<std::string, std::uint64_t> model;
    std::mt19937 random(seed);
    for (int step = 0; step < 4000; ++step) {
        // Keys of every length around a std::string's own buffer (15 bytes).
        const int n = static_cast<int>(random() % static_cast<std::uint32_t>(keys));
        std::string key = std::to_string(n);
        if (n % 4 == 1) key += std::string(static_cast<std::size_t>(n % 23), 'x');
        const std::uint64_t value = random();
        switch (random() % 5) {
            case 0:
            case 1: {
                const bool added = flat.emplace(key, value).second;
                CHECK(added == model.emplace(key, value).second);
                break;
            }
            case 2:
                flat[key] = value;
                model[key] = value;
                break;
            case 3:
                CHECK(flat.erase(key) == model.erase(key));
                break;
            default:
                if (const auto it = flat.find(key); it != flat.end()) {
                    flat.erase(it);
                    model.erase(key);
                } else {
                    CHECK(model.count(key) == 0);
                    CHECK_FALSE(flat.contains(key));
                }
                break;
        }
        if (step % 97 == 0) check_same(flat, model);
    }
    check_same(flat, model);
    // Emptied one key at a time, then used again.
    while (!model.empty()) {
        const std::string key = model.begin()->first;
        CHECK(flat.erase(key) == 1);
        model.erase(key);
    }
    check_same(flat, model);
    flat["again"] = 7;
    CHECK(flat.find("again")->second == 7);
}

}  // namespace

TEST_CASE("flat string map: reads what an unordered_map reads after random changes", "[flat_map]") {
    for (std::uint32_t seed = 1; seed <= 6; ++seed) {
        INFO("seed " << seed);
        random_operations<Standard>(seed, 40);
        random_operations<Standard>(seed, 400);
        random_operations<FewBuckets>(seed, 60);
    }
}

TEST_CASE("flat string map: an entry, its absence and its erasure", "[flat_map]") {
    mcpd::FlatStringMap<std::uint64_t, FewBuckets> map;
    CHECK(map.empty());
    CHECK_FALSE(map.contains("a"));
    CHECK(map.find("a") == map.end());
    CHECK(map.erase("a") == 0);
    CHECK(map.begin() == map.end());

    // Three keys in one bucket: erasing the first must leave the others found.
    CHECK(map.emplace("a", 1).second);
    CHECK(map.emplace("d", 2).second);  // 'a' and 'd' fall in the same bucket
    CHECK(map.emplace("g", 3).second);
    CHECK_FALSE(map.emplace("d", 9).second);
    CHECK(map.find("d")->second == 2);
    CHECK(map.erase("a") == 1);
    CHECK(map.find("d")->second == 2);
    CHECK(map.find("g")->second == 3);
    CHECK(map.size() == 2);
    const auto [it, added] = map.try_emplace("");
    CHECK(added);
    CHECK(it->second == 0);
    CHECK(map.contains(""));
    map.clear();
    CHECK(map.empty());
    CHECK_FALSE(map.contains("d"));
}
