#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <stdexcept>

#include "common/scope_guard.h"

using mcpd::AllSignalsBlocked;
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

TEST_CASE("scope guard: every signal blocked while it lives, the mask restored after",
          "[scope_guard]") {
    sigset_t before;
    REQUIRE(::sigprocmask(SIG_SETMASK, nullptr, &before) == 0);
    REQUIRE_FALSE(sigismember(&before, SIGUSR2));
    {
        const AllSignalsBlocked blocked;
        sigset_t during;
        REQUIRE(::sigprocmask(SIG_SETMASK, nullptr, &during) == 0);
        CHECK(sigismember(&during, SIGUSR2));
        CHECK(sigismember(&during, SIGTERM));
    }
    sigset_t after;
    REQUIRE(::sigprocmask(SIG_SETMASK, nullptr, &after) == 0);
    CHECK_FALSE(sigismember(&after, SIGUSR2));
    CHECK_FALSE(sigismember(&after, SIGTERM));
}
