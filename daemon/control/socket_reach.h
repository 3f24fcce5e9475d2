// Whether the users and groups a registry lets in (allow_users, allow_groups) can reach the
// control socket at all: connect() needs search permission on every directory of the path and
// write permission on the socket file. A per-user daemon's socket is private by default, so
// they would only ever get "Permission denied"; mcpd says so at start, at every reload and
// from --check-config, naming them and what to set.
#pragma once

#include <string>
#include <vector>

#include "config/registry.h"
#include "daemon/control/socket_directory.h"

namespace mcpd {

// How to read the socket's path: as it is on disk (mcpd has bound it), or as mcpd would leave
// it when it binds with its settings (`mcpd --check-config`: the socket file gets the mode
// and group of `access`, and a directory mcpd creates or keeps private the mode it would give).
enum class SocketState { bound, planned };

// One allowed user or group that cannot reach the socket.
struct UnreachablePeer {
    std::string who;      // "user bob (uid 1001)", "group devs (gid 1005)"
    std::string servers;  // the servers that let it in: "github, notes"
    std::string blocked;  // what stops it: "cannot search /run/user/1000 (mode 0700, uid 1000)"
};

// The allowed users and groups of `registry` that could not connect to `socket_path`. Root,
// mcpd's own user and names the system does not know are left out.
std::vector<UnreachablePeer> unreachable_peers(const config::Registry& registry,
                                               const std::string& socket_path,
                                               const SocketAccess& access, bool private_dir,
                                               SocketState state);

// The path a listening Unix socket is bound to (one systemd passed may not be where --socket
// says); "" for an unnamed or abstract one.
std::string bound_socket_path(int fd);

// One sentence naming them all and what to set; "" when the list is empty.
std::string unreachable_warning(const std::vector<UnreachablePeer>& peers,
                                const std::string& socket_path);

}  // namespace mcpd
