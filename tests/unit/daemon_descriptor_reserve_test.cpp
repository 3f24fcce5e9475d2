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
    REQUIRE(filler.size() >= 3);
    filler.pop_back();
    filler.pop_back();

    DescriptorReserve reserve(4);
    CHECK(reserve.held() == 2);
    CHECK_FALSE(reserve.full());
    filler.pop_back();
    CHECK_FALSE(reserve.refill());
    CHECK(reserve.held() == 3);
    filler.clear();
    CHECK(reserve.refill());
    CHECK(reserve.full());
}
