// What a reload has to do to a server whose registry entry changed.
#pragma once

#include "config/registry.h"

namespace mcpd {

enum class ConfigChange {
    none,    // the same entry
    // only allow_users / allow_groups / filters / request_log: applied to the running process
    // as it is
    access,
    restart  // anything the process sees or the supervisor uses: a new process
};

ConfigChange classify_change(const config::ServerConfig& current, const config::ServerConfig& next);

}  // namespace mcpd
