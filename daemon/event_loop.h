// Small RAII wrappers around libevent: a loop, one-shot timers and signal watchers.
// Each registers on construction and unregisters on destruction.
#pragma once

#include <event2/event.h>

#include <functional>
#include <memory>

#include "common/duration.h"

namespace mcpd {

class EventLoop {
public:
    EventLoop();
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    event_base* base() const { return base_; }
    int run();
    void exit();

    // Run `fn` on the next loop turn, after the current callback stack has unwound
    // (tmux's rule: never free inside the callback that noticed the end).
    void defer(std::function<void()> fn);

private:
    event_base* base_;
};

class Timer {
public:
    Timer(event_base* base, std::function<void()> on_fire);
    ~Timer();
    Timer(const Timer&) = delete;
    Timer& operator=(const Timer&) = delete;

    void arm(Duration after);  // re-arming replaces the previous deadline
    void cancel();
    bool pending() const;

private:
    static void fire(evutil_socket_t, short, void* self);
    std::function<void()> on_fire_;
    event* event_;
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
