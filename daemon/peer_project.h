// A session's project as its peer may have it: each file:// root and the directory resolved
// (symlinks, `.`, `..`) and opened with the peer's rights (control/peer_directory.h), and the
// project keyed by the peer's uid, so that sessions of two users never share a child and no
// session is given a child in a directory its user cannot open.
#pragma once

#include <sys/types.h>

#include "common/result.h"
#include "config/registry.h"
#include "daemon/control/peer_auth.h"
#include "daemon/mux/project.h"
#include "daemon/mux/project_placement.h"

namespace mcpd {

// The identity a child of `peer`'s runs as on a daemon running as root: its uid, gid and
// groups as the kernel gave them for its connection, and its account's name and home.
config::ChildIdentity child_identity(const PeerCredentials& peer);

// `project` with every directory canonical and checked as `peer`, and on a daemon running as
// root (but for root's own sessions) the identity its child runs as; the sentence of the first
// directory the peer may not have otherwise. `daemon_uid` is mcpd's effective uid.
Result<Project> project_for_peer(const Project& project, const PeerCredentials& peer,
                                 uid_t daemon_uid);

// The limits a new child of `server` is held to for `peer` (`trusted`: root or mcpd's user).
ChildQuota child_quota(const config::ServerConfig& server, const PeerCredentials& peer,
                       bool trusted);

}  // namespace mcpd
