// Small RAII wrappers around libevent: a loop, one-shot timers and signal watchers.
// Each registers on construction and unregisters on destruction. Readiness events and
// bufferevents have owners of their own: daemon/io/fd_watcher.h, daemon/io/buffer_event.h.
#pragma once

#include <event2/event.h>

#include <functional>
#include <list>
#include <memory>
#include <optional>

#include "common/clock.h"
#include "common/duration.h"
#include "daemon/io/eager_write.h"

namespace mcpd {

class EventLoop {
public:
    EventLoop();
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    event_base* base() const { return base_; }
    int run();

    // Run `fn` on the next loop turn, after the current callback stack has unwound
    // (tmux's rule: never free inside the callback that noticed the end). Work still pending
    // when the loop is destroyed is dropped, and its closure freed, without running.
    void defer(std::function<void()> fn);
    // Deferred closures not yet run.
    std::size_t deferred_count() const { return deferred_.size(); }

    // The held writes of this loop's readers and writers (daemon/io/eager_write.h), attached to
    // the loop: one write per destination per pass.
    WriteCoalescer& writes() { return writes_; }

private:
    struct Deferred {
        EventLoop* loop;
        std::function<void()> fn;
        std::list<Deferred>::iterator at;  // its own place in deferred_
    };
    static void run_deferred(evutil_socket_t, short, void* deferred);

    event_base* base_;
    WriteCoalescer writes_;
    std::list<Deferred> deferred_;
};

class Timer {
public:
    Timer(event_base* base, std::function<void()> on_fire);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    void arm(Duration after);  // re-arming replaces the previous deadline
    // Fire no sooner than `after` from now, for a deadline moved far more often than it is
    // reached (an idle timeout that every request moves): the deadline is only recorded, and
    // the timer armed when it is not; one that fires early is armed again for the rest. Not to
    // be mixed with arm(), which could leave it armed past the deadline.
    void postpone(Duration after);
    void cancel();
    bool pending() const { return armed_; }  // armed and not yet fired

private:
    static void fire(evutil_socket_t, short, void* self);
    void add(Duration after);
    std::function<void()> on_fire_;
    event* event_;
    bool armed_ = false;
    std::optional<TimePoint> due_;  // set by postpone()
};

class SignalWatcher {
public:
    SignalWatcher(event_base* base, int signo, std::function<void()> on_signal);
    ~SignalWatcher();
    SignalWatcher(const SignalWatcher&) = delete;
    SignalWatcher& operator=(const SignalWatcher&) = delete;

private:
    static void fire(evutil_socket_t, short, void* self);
    std::function<void()> on_signal_;
    event* event_;
};

}  // namespace mcpd
