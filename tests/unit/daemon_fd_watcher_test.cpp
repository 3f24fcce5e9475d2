// FdWatcher and BufferEvent: registration follows the owner's lifetime, moves keep the
// callback bound, and freeing clears callbacks and closes the descriptor.
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <utility>

#include "common/unique_fd.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/fd_watcher.h"

using mcpd::BufferEvent;
using mcpd::EventLoop;
using mcpd::FdWatcher;
using mcpd::UniqueFd;

namespace {

struct Pipe {
    Pipe() {
        int fds[2];
        REQUIRE(::pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
        read_end.reset(fds[0]);
        write_end.reset(fds[1]);
    }
    void put(const char* byte = "x") const { REQUIRE(::write(write_end.get(), byte, 1) == 1); }
    UniqueFd read_end;
    UniqueFd write_end;
};

// One pass of the loop without waiting (the pipes are never read, so they stay readable).
void turn(EventLoop& loop) { event_base_loop(loop.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK); }

}  // namespace

TEST_CASE("fd watcher: registered from construction to destruction", "[fd_watcher]") {
    EventLoop loop;
    Pipe pipe;
    int fired = 0;
    {
        const FdWatcher watcher(loop.base(), pipe.read_end.get(), EV_READ | EV_PERSIST,
                                [&fired] { ++fired; });
        CHECK(watcher.registered());
        CHECK(watcher.fd() == pipe.read_end.get());
        pipe.put();
        turn(loop);
        CHECK(fired == 1);
    }
    // Gone with its owner: readable data no longer calls anything, and the loop has no events.
    turn(loop);
    CHECK(fired == 1);
    CHECK(event_base_get_num_events(loop.base(), EVENT_BASE_COUNT_ADDED) == 0);
}

TEST_CASE("fd watcher: disable and enable", "[fd_watcher]") {
    EventLoop loop;
    Pipe pipe;
    int fired = 0;
    FdWatcher watcher(loop.base(), pipe.read_end.get(), EV_READ | EV_PERSIST,
                      [&fired] { ++fired; });
    watcher.disable();
    CHECK_FALSE(watcher.registered());
    pipe.put();
    turn(loop);
    CHECK(fired == 0);
    watcher.enable();
    turn(loop);
    CHECK(fired == 1);
}

TEST_CASE("fd watcher: a moved watcher still calls back, the moved-from one is empty",
          "[fd_watcher]") {
    EventLoop loop;
    Pipe pipe;
    int fired = 0;
    FdWatcher first(loop.base(), pipe.read_end.get(), EV_READ | EV_PERSIST,
                    [&fired] { ++fired; });
    FdWatcher second(std::move(first));
    CHECK_FALSE(first);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    CHECK_FALSE(first.registered());
    REQUIRE(second);
    pipe.put();
    turn(loop);
    CHECK(fired == 1);

    FdWatcher third;
    third = std::move(second);
    pipe.put();
    turn(loop);
    CHECK(fired == 2);
    third.reset();
    CHECK_FALSE(third);
    pipe.put();
    turn(loop);
    CHECK(fired == 2);
}

TEST_CASE("fd watcher: a one-shot watcher fires once until enabled again", "[fd_watcher]") {
    EventLoop loop;
    Pipe pipe;
    int fired = 0;
    FdWatcher watcher(loop.base(), pipe.read_end.get(), EV_READ, [&fired] { ++fired; });
    pipe.put();
    turn(loop);
    turn(loop);
    CHECK(fired == 1);
    CHECK_FALSE(watcher.registered());
    watcher.enable();
    turn(loop);
    CHECK(fired == 2);
}

TEST_CASE("fd watcher: its callback may free it", "[fd_watcher]") {
    EventLoop loop;
    Pipe pipe;
    int fired = 0;
    FdWatcher watcher;
    watcher = FdWatcher(loop.base(), pipe.read_end.get(), EV_READ | EV_PERSIST, [&] {
        ++fired;
        watcher.reset();
    });
    pipe.put();
    turn(loop);
    turn(loop);
    CHECK(fired == 1);
    CHECK_FALSE(watcher);
}

TEST_CASE("buffer event: freeing it closes its descriptor and never calls back", "[buffer_event]") {
    EventLoop loop;
    Pipe pipe;
    const int read_fd = pipe.read_end.get();
    int called = 0;
    {
        BufferEvent bev = BufferEvent::over(loop.base(), std::move(pipe.read_end));
        REQUIRE(bev);
        CHECK(bev.fd() == read_fd);
        bufferevent_setcb(
            bev.get(), [](bufferevent*, void* n) { ++*static_cast<int*>(n); }, nullptr,
            [](bufferevent*, short, void* n) { ++*static_cast<int*>(n); }, &called);
        bufferevent_enable(bev.get(), EV_READ);
        pipe.put();
        turn(loop);
        CHECK(called == 1);
        pipe.put();  // pending when it is freed
    }
    turn(loop);
    CHECK(called == 1);
    // Its descriptor went with it (nothing opened since could have taken the number).
    CHECK(::fcntl(read_fd, F_GETFD) == -1);
    CHECK(errno == EBADF);
}

TEST_CASE("buffer event: moving passes ownership", "[buffer_event]") {
    EventLoop loop;
    Pipe pipe;
    BufferEvent first = BufferEvent::over(loop.base(), std::move(pipe.write_end));
    bufferevent* raw = first.get();
    BufferEvent second(std::move(first));
    CHECK(first == nullptr);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
    CHECK(second.get() == raw);
    BufferEvent third;
    third = std::move(second);
    CHECK(third.get() == raw);
    // Still usable by its new owner: what it queues reaches the pipe.
    evbuffer_add(third.output(), "hi", 2);
    bufferevent_enable(third.get(), EV_WRITE);
    turn(loop);
    char got[2] = {};
    CHECK(::read(pipe.read_end.get(), got, 2) == 2);
    third.reset();
    CHECK(third == nullptr);
    turn(loop);  // libevent finalizes a freed bufferevent on the loop
    CHECK(::read(pipe.read_end.get(), got, 2) == 0);  // EOF: the write end went with it
}
