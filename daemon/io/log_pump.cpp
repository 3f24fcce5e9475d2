#include "daemon/io/log_pump.h"

#include <algorithm>
#include <chrono>

#include "common/clock.h"
#include "common/log.h"
#include "common/log_output.h"

namespace mcpd {

namespace {

// The one pump of the process: the log's backlog callback is a plain function.
LogPump* g_pump = nullptr;
event* g_writable = nullptr;
event* g_counts_due = nullptr;

timeval to_timeval(Clock::duration wait) {
    const auto usec = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::microseconds>(wait).count());
    return timeval{static_cast<time_t>(usec / 1000000), static_cast<suseconds_t>(usec % 1000000)};
}

}  // namespace

LogPump::LogPump(event_base* base)
    : writable_(nullptr), counts_due_(nullptr) {
    log::use_nonblocking_stderr();
    writable_ = event_new(base, log::stderr_output().fd(), EV_WRITE, &LogPump::on_writable, this);
    counts_due_ = evtimer_new(base, &LogPump::on_counts_due, this);
    g_pump = this;
    g_writable = writable_;
    g_counts_due = counts_due_;
    log::stderr_output().on_backlog(&LogPump::on_backlog);
    log::on_flush_wanted(&LogPump::on_flush_wanted);
    if (log::stderr_output().pending()) event_add(writable_, nullptr);
}

LogPump::~LogPump() {
    log::stderr_output().on_backlog(nullptr);
    log::on_flush_wanted(nullptr);
    g_pump = nullptr;
    g_writable = nullptr;
    g_counts_due = nullptr;
    if (counts_due_ != nullptr) event_free(counts_due_);
    if (writable_ != nullptr) event_free(writable_);
    // Counts still pending are said now: nothing held back goes unreported.
    log::flush_due(Clock::now() + std::chrono::hours(1));
    // What still waits goes out as far as stderr takes it now.
    log::stderr_output().flush();
}

void LogPump::on_writable(evutil_socket_t, short, void* self) {
    auto* pump = static_cast<LogPump*>(self);
    if (log::stderr_output().flush()) event_add(pump->writable_, nullptr);
}

void LogPump::on_counts_due(evutil_socket_t, short, void* self) {
    auto* pump = static_cast<LogPump*>(self);
    const auto now = Clock::now();
    if (const auto next = log::flush_due(now)) {
        const timeval wait = to_timeval(*next - now);
        evtimer_add(pump->counts_due_, &wait);
    }
}

void LogPump::on_flush_wanted() {
    if (g_counts_due == nullptr || evtimer_pending(g_counts_due, nullptr)) return;
    const timeval soon = to_timeval(std::chrono::milliseconds(100));
    evtimer_add(g_counts_due, &soon);
}

void LogPump::on_backlog() {
    if (g_pump != nullptr && g_writable != nullptr) event_add(g_writable, nullptr);
}

}  // namespace mcpd
