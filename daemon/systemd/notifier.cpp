#include "daemon/systemd/notifier.h"

#include <systemd/sd-daemon.h>

#include <ctime>

namespace mcpd {
namespace {

// Never pass unset_environment=1: that would unset NOTIFY_SOCKET and silence every later call.
void notify(const std::string& message) { sd_notify(0, message.c_str()); }

unsigned long long monotonic_usec() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<unsigned long long>(ts.tv_sec) * 1000000ULL +
           static_cast<unsigned long long>(ts.tv_nsec) / 1000ULL;
}

}  // namespace

void Notifier::ready(const std::string& status) { notify("READY=1\nSTATUS=" + status); }

void Notifier::status(const std::string& status) { notify("STATUS=" + status); }

void Notifier::reloading() {
    notify("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(monotonic_usec()));
}

void Notifier::stopping() { notify("STOPPING=1"); }

void Notifier::watchdog() { notify("WATCHDOG=1"); }

void Notifier::extend_timeout(std::chrono::milliseconds by) {
    notify("EXTEND_TIMEOUT_USEC=" + std::to_string(by.count() * 1000));
}

}  // namespace mcpd
