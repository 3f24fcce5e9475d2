// Who may talk to the daemon: SO_PEERCRED of each connection against the daemon's owner,
// root, and the servers' allow_users / allow_groups. Authority is the one place mcpd asks.
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

// The peer's primary group plus its supplementary groups: the process's own when the kernel
// said them, else those the group database gives its user.
std::vector<gid_t> peer_groups(const PeerCredentials& peer);

// Root and the daemon's own user may do anything.
bool is_privileged_peer(const PeerCredentials& peer, uid_t owner);

// Whether `peer` is named in the server's allow_users, or belongs to one of its allow_groups.
bool peer_allowed_for(const PeerCredentials& peer, const config::ServerConfig& server);

// A peer may connect when it is privileged or allowed for at least one server.
bool peer_may_connect(const PeerCredentials& peer, const config::Registry& registry, uid_t owner);

// Every authorization decision of the daemon, against one owner uid read once at start-up.
class Authority {
public:
    explicit Authority(uid_t owner) : owner_(owner) {}

    uid_t owner() const { return owner_; }
    // Root or mcpd's own user: may do anything, see everything.
    bool trusted(const PeerCredentials& peer) const { return is_privileged_peer(peer, owner_); }
    // May attach to, look at and act on `server`.
    bool may_use(const PeerCredentials& peer, const config::ServerConfig& server) const {
        return trusted(peer) || peer_allowed_for(peer, server);
    }
    // May hold a control connection at all.
    bool may_connect(const PeerCredentials& peer, const config::Registry& registry) const {
        return peer_may_connect(peer, registry, owner_);
    }

private:
    uid_t owner_;
};

}  // namespace mcpd
