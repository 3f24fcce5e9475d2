#include "common/recycling_allocator.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

// A type of this file's own, so that no other test's nodes share its free list.
struct Record {
    std::uint64_t a = 0;
    std::string text;
};

}  // namespace

using mcpd::RecyclingAllocator;

TEST_CASE("recycling allocator: a freed node is the next one given, arrays are not kept",
          "[recycling_allocator]") {
    RecyclingAllocator<Record> alloc;
    const std::size_t kept_before = RecyclingAllocator<Record>::kept();
    Record* first = alloc.allocate(1);
    Record* second = alloc.allocate(1);
    CHECK(first != second);
    alloc.deallocate(first, 1);
    alloc.deallocate(second, 1);
    CHECK(RecyclingAllocator<Record>::kept() == kept_before + 2);
#if defined(MCPD_RECYCLING_ASAN)
    // A kept node is poisoned, as freed memory is: a use after free is still reported.
    CHECK(__asan_address_is_poisoned(reinterpret_cast<char*>(first) + sizeof(Record) - 1));
#endif
    // Last freed, first given: the one most likely still in the cache.
    CHECK(alloc.allocate(1) == second);
    CHECK(alloc.allocate(1) == first);
    CHECK(RecyclingAllocator<Record>::kept() == kept_before);
    alloc.deallocate(first, 1);
    alloc.deallocate(second, 1);

    // An array goes to operator new and back: the free list does not change.
    const std::size_t kept = RecyclingAllocator<Record>::kept();
    Record* array = alloc.allocate(4);
    CHECK(RecyclingAllocator<Record>::kept() == kept);
    alloc.deallocate(array, 4);
    CHECK(RecyclingAllocator<Record>::kept() == kept);
}

TEST_CASE("recycling allocator: what a burst leaves behind is bounded", "[recycling_allocator]") {
    RecyclingAllocator<Record> alloc;
    const std::size_t burst = RecyclingAllocator<Record>::kKeptNodes + 100;
    std::vector<Record*> nodes;
    for (std::size_t i = 0; i < burst; ++i) nodes.push_back(alloc.allocate(1));
    for (Record* node : nodes) alloc.deallocate(node, 1);
    CHECK(RecyclingAllocator<Record>::kept() == RecyclingAllocator<Record>::kKeptNodes);
}

TEST_CASE("recycling allocator: a table's nodes come back to it", "[recycling_allocator]") {
    using Table = std::unordered_map<std::uint64_t, Record, std::hash<std::uint64_t>,
                                     std::equal_to<std::uint64_t>,
                                     RecyclingAllocator<std::pair<const std::uint64_t, Record>>>;
    Table table;
    table.reserve(64);  // the buckets are made now
    std::set<const void*> places;
    for (std::uint64_t i = 0; i < 50; ++i) {
        table[i].text = std::string(40, 'x');  // a string of its own on the heap
        places.insert(&table.at(i));
    }
    for (std::uint64_t i = 0; i < 50; ++i) table.erase(i);
    // The next fifty entries lie where the erased ones did: every node was a freed one.
    for (std::uint64_t i = 0; i < 50; ++i) {
        table.try_emplace(i + 100, Record{i, "y"});
        CHECK(places.contains(&table.at(i + 100)));
    }
    CHECK(table.at(149).a == 49);
    CHECK(table.at(100).text == "y");
}
