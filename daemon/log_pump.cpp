#include "daemon/log_pump.h"

#include "common/log_output.h"

namespace mcpd {

namespace {

// The one pump of the process: the log's backlog callback is a plain function.
LogPump* g_pump = nullptr;
event* g_writable = nullptr;

}  // namespace

LogPump::LogPump(event_base* base)
    : writable_(nullptr) {
    log::use_nonblocking_stderr();
    writable_ = event_new(base, log::stderr_output().fd(), EV_WRITE, &LogPump::on_writable, this);
    g_pump = this;
    g_writable = writable_;
    log::stderr_output().on_backlog(&LogPump::on_backlog);
    if (log::stderr_output().pending()) event_add(writable_, nullptr);
}

LogPump::~LogPump() {
    log::stderr_output().on_backlog(nullptr);
    g_pump = nullptr;
    g_writable = nullptr;
    if (writable_ != nullptr) event_free(writable_);
    // What still waits goes out as far as stderr takes it now.
    log::stderr_output().flush();
}

void LogPump::on_writable(evutil_socket_t, short, void* self) {
    auto* pump = static_cast<LogPump*>(self);
    if (log::stderr_output().flush()) event_add(pump->writable_, nullptr);
}

void LogPump::on_backlog() {
    if (g_pump != nullptr && g_writable != nullptr) event_add(g_writable, nullptr);
}

}  // namespace mcpd
