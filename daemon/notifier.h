// Telling systemd how the daemon is doing (sd_notify). Every call is a no-op outside systemd.
#pragma once

#include <string>

namespace mcpd {

class Notifier {
public:
    void ready(const std::string& status);
    void status(const std::string& status);
    void reloading();
    void stopping();
};

}  // namespace mcpd
