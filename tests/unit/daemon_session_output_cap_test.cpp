// The per-session output cap as a rule on sizes: growth since the client last read is capped,
// not what waits in all.
#include <catch2/catch.hpp>

#include "byte_units.h"
#include "daemon/mux/stream_transport.h"

using mcpd::OutputCap;

TEST_CASE("output cap: messages that fit under the cap since the last read go", "[session][cap]") {
    OutputCap cap(1000);
    cap.taken(0);
    CHECK(cap.admits(100, 400));
    CHECK(cap.admits(500, 400));
    CHECK(cap.grown(900) == 900);
    // The client read: only what comes after counts.
    cap.taken(300);
    CHECK(cap.grown(300) == 0);
    CHECK(cap.admits(300, 1000));  // exactly the cap
}

TEST_CASE("output cap: a client that reads nothing gets the cap and one message more",
          "[session][cap]") {
    OutputCap cap(1000);
    cap.taken(50);  // the first message, what the socket did not take
    CHECK(cap.admits(50, 600));
    CHECK(cap.admits(650, 300));   // 900 grown
    CHECK(cap.admits(950, 5000));  // over: the one message let past
    CHECK(cap.grown(5950) == 900);
    CHECK(cap.admits(5950, 100));  // still within the cap, not counting it
    CHECK_FALSE(cap.admits(6050, 1));
    CHECK_FALSE(cap.admits(6050, 1));  // refusing counts nothing
}

TEST_CASE("output cap: two results larger than the cap reach a client before it reads",
          "[session][cap]") {
    // Under the defaults: a 4 MiB cap, two 6 MiB results answered at once.
    OutputCap cap(4 * kMiB);
    const std::size_t result = 6 * kMiB;
    // The first goes to a client that had caught up; the socket took 200 KiB of it.
    const std::size_t left = result - 200 * 1024;
    cap.taken(left);
    CHECK(cap.admits(left, result));
    // Small messages behind them still fit (a log line, a progress notification).
    CHECK(cap.admits(left + result, 300));
    CHECK(cap.admits(left + result + 300, 300));
    // A third large one before the client read anything: it stopped reading, as far as
    // anything can tell.
    CHECK_FALSE(cap.admits(left + result + 600, result));
}

TEST_CASE("output cap: a client that keeps reading is never cut, however much waits",
          "[session][cap]") {
    OutputCap cap(4 * kMiB);
    const std::size_t result = 6 * kMiB;
    std::size_t queued = result;
    cap.taken(queued);
    // The server answers a 6 MiB result for every 1 MiB the client reads: the queue grows, but
    // the client reads between them.
    for (int i = 0; i < 50; ++i) {
        INFO("result " << i << ", " << queued << " bytes queued");
        REQUIRE(cap.admits(queued, result));
        queued += result;
        queued -= kMiB;
        cap.taken(queued);
    }
    CHECK(queued > 200 * kMiB);  // what bounds this is the daemon-wide budget
}

TEST_CASE("output cap: reading gives back the message let past", "[session][cap]") {
    OutputCap cap(1000);
    cap.taken(0);
    CHECK(cap.admits(10, 2000));
    CHECK_FALSE(cap.admits(2010, 2000));
    cap.taken(2000);  // it took 10 bytes
    CHECK(cap.admits(2000, 2000));
    CHECK_FALSE(cap.admits(4000, 2000));
    // The queue shrank without a read being seen (held writes went straight out): growth is
    // not negative.
    cap.taken(4000);
    CHECK(cap.grown(100) == 0);
    CHECK(cap.admits(100, 1000));
}
