#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <stdexcept>

#include "common/scope_guard.h"

using mcpd::OnScopeEnd;

TEST_CASE("scope guard: runs when its scope ends, on every way out", "[scope_guard]") {
    int runs = 0;
    {
        const OnScopeEnd guard([&runs] { ++runs; });
        CHECK(runs == 0);
    }
    CHECK(runs == 1);
    const auto leave_early = [&runs](bool early) {
        const OnScopeEnd guard([&runs] { ++runs; });
        if (early) return 1;
        return 2;
    };
    CHECK(leave_early(true) == 1);
    CHECK(leave_early(false) == 2);
    CHECK(runs == 3);
    CHECK_THROWS_AS(([&runs] {
                        const OnScopeEnd guard([&runs] { ++runs; });
                        throw std::runtime_error("out");
                    }()),
                    std::runtime_error);
    CHECK(runs == 4);
}

TEST_CASE("scope guard: restores a umask", "[scope_guard]") {
    const mode_t before = ::umask(022);
    {
        const mode_t old = ::umask(0177);
        const OnScopeEnd restore([old] { ::umask(old); });
        CHECK(::umask(0177) == 0177);
    }
    CHECK(::umask(before) == 022);
}
