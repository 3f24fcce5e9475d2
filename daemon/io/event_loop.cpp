#include "daemon/io/event_loop.h"

#include <iterator>
#include <stdexcept>

namespace mcpd {
namespace {

timeval to_timeval(Duration d) {
    const auto ms = d.count() < 0 ? 0 : d.count();
    return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
}

}  // namespace

EventLoop::EventLoop() : base_(event_base_new()) {
    if (base_ == nullptr) throw std::runtime_error("cannot create the event loop");
    writes_.attach(base_);
}

EventLoop::~EventLoop() {
    // Closures still pending go while the base is alive: what they capture may hold events.
    // Freeing one may defer more, hence the loop.
    while (!deferred_.empty()) {
        std::list<Deferred> pending;
        pending.swap(deferred_);
    }
    writes_.detach();  // its flush event belongs to the base
    event_base_free(base_);
}

int EventLoop::run() { return event_base_dispatch(base_); }

void EventLoop::defer(std::function<void()> fn) {
    Deferred& d = deferred_.emplace_back(Deferred{this, std::move(fn), {}});
    d.at = std::prev(deferred_.end());
    const timeval now{0, 0};
    if (event_base_once(base_, -1, EV_TIMEOUT, &EventLoop::run_deferred, &d, &now) != 0) {
        deferred_.erase(d.at);
        throw std::runtime_error("cannot schedule deferred work");
    }
}

void EventLoop::run_deferred(evutil_socket_t, short, void* deferred) {
    auto* d = static_cast<Deferred*>(deferred);
    // Out of the list before it runs, so that it is freed even if it throws.
    const std::function<void()> fn = std::move(d->fn);
    d->loop->deferred_.erase(d->at);
    fn();
}

Timer::Timer(event_base* base, std::function<void()> on_fire)
    : on_fire_(std::move(on_fire)), event_(evtimer_new(base, &Timer::fire, this)) {}

Timer::~Timer() { event_free(event_); }

void Timer::add(Duration after) {
    const timeval tv = to_timeval(after);
    evtimer_add(event_, &tv);
    armed_ = true;
}

void Timer::arm(Duration after) {
    due_.reset();
    add(after);
}

void Timer::postpone(Duration after) {
    due_ = Clock::now() + after;
    if (!armed_) add(after);
}

void Timer::cancel() {
    evtimer_del(event_);
    armed_ = false;
    due_.reset();
}

void Timer::fire(evutil_socket_t, short, void* self) {
    Timer& timer = *static_cast<Timer*>(self);
    timer.armed_ = false;
    if (timer.due_) {
        // Armed for an earlier deadline, and postponed since: the rest of the new one.
        if (const TimePoint now = Clock::now(); now < *timer.due_) {
            timer.add(std::chrono::ceil<Duration>(*timer.due_ - now));
            return;
        }
        timer.due_.reset();
    }
    timer.on_fire_();
}

SignalWatcher::SignalWatcher(event_base* base, int signo, std::function<void()> on_signal)
    : on_signal_(std::move(on_signal)),
      event_(evsignal_new(base, signo, &SignalWatcher::fire, this)) {
    evsignal_add(event_, nullptr);
}

SignalWatcher::~SignalWatcher() { event_free(event_); }

void SignalWatcher::fire(evutil_socket_t, short, void* self) {
    static_cast<SignalWatcher*>(self)->on_signal_();
}

}  // namespace mcpd
