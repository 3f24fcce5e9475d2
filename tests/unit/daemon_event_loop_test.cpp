// EventLoop::defer: work runs on the next turn, and closures never run are freed with the loop.
#include <event2/event.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "daemon/io/event_loop.h"

using mcpd::EventLoop;

TEST_CASE("event loop: deferred work runs after the current callback, in order",
          "[event_loop]") {
    EventLoop loop;
    std::vector<int> ran;
    loop.defer([&ran] { ran.push_back(1); });
    loop.defer([&ran, &loop] {
        ran.push_back(2);
        loop.defer([&ran] { ran.push_back(3); });
        CHECK(ran.back() == 2);  // not run inside the closure that deferred it
    });
    CHECK(ran.empty());
    CHECK(loop.deferred_count() == 2);
    event_base_loop(loop.base(), EVLOOP_NONBLOCK);
    CHECK(ran == std::vector<int>{1, 2, 3});
    CHECK(loop.deferred_count() == 0);
}

TEST_CASE("event loop: a closure still pending is freed with the loop, without running",
          "[event_loop]") {
    auto captured = std::make_shared<int>(7);
    const std::weak_ptr<int> watch = captured;
    bool ran = false;
    {
        std::optional<EventLoop> loop(std::in_place);
        loop->defer([captured = std::move(captured), &ran] { ran = *captured == 7; });
        CHECK_FALSE(watch.expired());
        loop.reset();
    }
    CHECK(watch.expired());
    CHECK_FALSE(ran);
}

TEST_CASE("event loop: a closure that ran is freed at once", "[event_loop]") {
    EventLoop loop;
    auto captured = std::make_shared<int>(1);
    const std::weak_ptr<int> watch = captured;
    loop.defer([captured = std::move(captured)] {});
    event_base_loop(loop.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
    CHECK(watch.expired());
}

TEST_CASE("timer: a postponed deadline fires once, no sooner than the last postponement asked",
          "[event_loop]") {
    using namespace std::chrono_literals;
    using SteadyClock = std::chrono::steady_clock;
    EventLoop loop;
    int fired = 0;
    SteadyClock::time_point fired_at;
    mcpd::Timer timer(loop.base(), [&] {
        ++fired;
        fired_at = SteadyClock::now();
    });
    // Armed for 10 ms and moved to 200 ms before the loop runs: the first wake is early, and the
    // timer is armed again for the rest. Nothing here sleeps, so however late this process is
    // scheduled, no callback can come before the deadline in force when it runs.
    const auto start = SteadyClock::now();
    timer.postpone(10ms);
    timer.postpone(200ms);
    CHECK(timer.pending());
    event_base_loop(loop.base(), EVLOOP_ONCE);
    const int early = fired;  // 0 unless this process stood still for 190 ms
    if (early > 0) CHECK(fired_at - start >= 200ms);
    // Moved past that while armed for the rest: it wakes early once more and fires once, at the
    // last deadline or after.
    const auto last = SteadyClock::now();
    timer.postpone(300ms);
    CHECK(timer.pending());
    while (fired == early && SteadyClock::now() - start < 5s)
        event_base_loop(loop.base(), EVLOOP_ONCE);
    CHECK(fired == early + 1);
    CHECK(fired_at - last >= 300ms);
    CHECK_FALSE(timer.pending());
    const int before_cancel = fired;
    // Cancelled, it is not pending; armed again, it fires at the time arm() gives.
    timer.postpone(30ms);
    timer.cancel();
    CHECK_FALSE(timer.pending());
    timer.arm(0ms);
    event_base_loop(loop.base(), EVLOOP_ONCE);
    CHECK(fired == before_cancel + 1);
    CHECK_FALSE(timer.pending());
}
