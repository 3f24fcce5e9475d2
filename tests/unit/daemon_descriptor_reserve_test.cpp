// DescriptorReserve: descriptors held back, given back when the table is full, and taken back
// as far as there is room.
#include <fcntl.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <vector>

#include "common/scope_guard.h"
#include "common/unique_fd.h"
#include "daemon/io/descriptor_reserve.h"

using mcpd::DescriptorReserve;
using mcpd::UniqueFd;

namespace {

std::size_t open_descriptors() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n;
}

}  // namespace

TEST_CASE("a descriptor reserve holds its descriptors until it gives them back", "[reserve]") {
    const std::size_t before = open_descriptors();
    DescriptorReserve reserve(4);
    CHECK(reserve.full());
    CHECK(reserve.held() == 4);
    CHECK(open_descriptors() == before + 4);
    CHECK(reserve.release() == 4);
    CHECK(reserve.held() == 0);
    CHECK(open_descriptors() == before);
    CHECK(reserve.release() == 0);
    CHECK(reserve.refill());
    CHECK(open_descriptors() == before + 4);
}

TEST_CASE("a full descriptor table gives the reserve what room there is", "[reserve]") {
    rlimit saved{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved) == 0);
    const mcpd::OnScopeEnd restore([&saved] { ::setrlimit(RLIMIT_NOFILE, &saved); });
    const rlimit low{open_descriptors() + 16, saved.rlim_max};
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &low) == 0);

    // Fill the table, then leave two places.
    std::vector<UniqueFd> filler;
    for (;;) {
        UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        if (!fd) break;
        filler.push_back(std::move(fd));
    }
    const std::size_t filled = filler.size();
    if (filled < 3) filler.clear();  // checked below, once there is room
    if (!filler.empty()) filler.pop_back();
    if (!filler.empty()) filler.pop_back();

    // What the reserve did is read while the table is full and checked once there is room:
    // a failing check itself needs descriptors (the sanitizers' reports do).
    DescriptorReserve reserve(4);
    const std::size_t held_at_first = reserve.held();
    const bool full_at_first = reserve.full();
    filler.pop_back();
    const bool refilled_with_one_place = reserve.refill();
    const std::size_t held_then = reserve.held();
    filler.clear();
    REQUIRE(filled >= 3);
    CHECK(held_at_first == 2);
    CHECK_FALSE(full_at_first);
    CHECK_FALSE(refilled_with_one_place);
    CHECK(held_then == 3);
    CHECK(reserve.refill());
    CHECK(reserve.full());
}
