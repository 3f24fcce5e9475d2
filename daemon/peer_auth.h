// Who may talk to the daemon: SO_PEERCRED of each connection against the daemon's owner,
// root, and the servers' allow_users / allow_groups.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "config/registry.h"

namespace mcpd {

struct PeerCredentials {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    // The connecting process's supplementary groups (SO_PEERGROUPS), which is what a file's
    // group permission goes by; where the kernel cannot tell (groups_known false), the user's
    // groups from the group database are used instead.
    std::vector<gid_t> groups = {};
    bool groups_known = false;
};

std::optional<PeerCredentials> peer_credentials(int socket_fd);

// Root and the daemon's own user may do anything.
bool is_privileged_peer(const PeerCredentials& peer, uid_t owner);

// Whether `peer` is named in the server's allow_users, or belongs to one of its allow_groups.
bool peer_allowed_for(const PeerCredentials& peer, const config::ServerConfig& server);

// A peer may connect when it is privileged or allowed for at least one server.
bool peer_may_connect(const PeerCredentials& peer, const config::Registry& registry, uid_t owner);

}  // namespace mcpd
