// Telling systemd how the daemon is doing (sd_notify). Every call is a no-op outside systemd.
#pragma once

#include <chrono>
#include <string>

namespace mcpd {

class Notifier {
public:
    void ready(const std::string& status);
    void status(const std::string& status);
    void reloading();
    void stopping();
    void watchdog();
    // Ask for more time than TimeoutStopSec while stopping (a long drain).
    void extend_timeout(std::chrono::milliseconds by);
};

}  // namespace mcpd
