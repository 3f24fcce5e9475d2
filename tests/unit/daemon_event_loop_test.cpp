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
    EventLoop loop;
    int fired = 0;
    mcpd::Timer timer(loop.base(), [&fired] { ++fired; });
    const auto start = std::chrono::steady_clock::now();
    timer.postpone(60ms);
    CHECK(timer.pending());
    // Moved twice before it is reached: the timer stays armed for the first deadline, fires
    // early, and is armed for the rest of the last one.
    for (int i = 0; i < 2; ++i) {
        std::this_thread::sleep_for(40ms);
        event_base_loop(loop.base(), EVLOOP_NONBLOCK);
        timer.postpone(60ms);
    }
    const auto last = std::chrono::steady_clock::now();
    while (fired == 0 && std::chrono::steady_clock::now() - start < 5s)
        event_base_loop(loop.base(), EVLOOP_ONCE);
    CHECK(fired == 1);
    CHECK(std::chrono::steady_clock::now() - last >= 60ms);
    CHECK_FALSE(timer.pending());
    // Cancelled, it is not pending; armed again, it fires at the time arm() gives.
    timer.postpone(30ms);
    timer.cancel();
    CHECK_FALSE(timer.pending());
    timer.arm(0ms);
    event_base_loop(loop.base(), EVLOOP_ONCE);
    CHECK(fired == 2);
    CHECK_FALSE(timer.pending());
}
