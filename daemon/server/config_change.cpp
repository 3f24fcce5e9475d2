#include "daemon/server/config_change.h"

namespace mcpd {

ConfigChange classify_change(const config::ServerConfig& current,
                             const config::ServerConfig& next) {
    if (current == next) return ConfigChange::none;
    // Who may use a server, and what its sessions are shown, is mcpd's business alone: the
    // process never sees it.
    config::ServerConfig same_access = next;
    same_access.allow_users = current.allow_users;
    same_access.allow_groups = current.allow_groups;
    same_access.filters = current.filters;
    return same_access == current ? ConfigChange::access : ConfigChange::restart;
}

}  // namespace mcpd
