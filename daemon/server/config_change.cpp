#include "daemon/server/config_change.h"

namespace mcpd {

ConfigChange classify_change(const config::ServerConfig& current,
                             const config::ServerConfig& next) {
    if (current == next) return ConfigChange::none;
    // Who may use a server, what its sessions are shown and whether their requests are logged
    // is mcpd's business alone: the process never sees it.
    config::ServerConfig same_access = next;
    same_access.allow_users = current.allow_users;
    same_access.allow_groups = current.allow_groups;
    same_access.filters = current.filters;
    same_access.request_log = current.request_log;
    same_access.replay = current.replay;  // read when a child dies
    return same_access == current ? ConfigChange::access : ConfigChange::restart;
}

}  // namespace mcpd
