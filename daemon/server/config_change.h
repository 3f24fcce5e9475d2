// What a reload has to do to a server whose registry entry changed.
#pragma once

#include "config/registry.h"

namespace mcpd {

enum class ConfigChange {
    none,    // the same entry
    access,  // only allow_users / allow_groups / filters: applied to the running process as it is
    restart  // anything the process sees or the supervisor uses: a new process
};

ConfigChange classify_change(const config::ServerConfig& current, const config::ServerConfig& next);

}  // namespace mcpd
