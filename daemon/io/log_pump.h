// Drains the daemon log's queue (common/log_output.h) from the event loop: while lines wait
// for stderr, the loop watches it for room instead of any write blocking the daemon. And
// says the log's counts (lines over the rate, folded repeats: common/log_limits.h) when they
// fall due, so the end of a flood is reported when it ends.
#pragma once

#include <event2/event.h>

namespace mcpd {

class LogPump {
public:
    // Makes stderr non-blocking for the rest of the process's life.
    explicit LogPump(event_base* base);
    ~LogPump();
    LogPump(const LogPump&) = delete;
    LogPump& operator=(const LogPump&) = delete;

private:
    static void on_writable(evutil_socket_t fd, short what, void* self);
    static void on_backlog();
    static void on_counts_due(evutil_socket_t fd, short what, void* self);
    static void on_flush_wanted();

    event* writable_;
    event* counts_due_;
};

}  // namespace mcpd
