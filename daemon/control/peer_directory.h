// A directory a peer names (its working directory, or a root its client reports), taken only
// when the peer itself could open it. A project's child runs in that directory and is handed
// it as `{project}`, so a directory that mcpd's user may open but the peer may not must never
// become a project: that would give the peer the daemon's rights over it.
//
// The kernel decides, not mode bits read here: the path is resolved (symlinks, `.`, `..`) and
// opened with the peer's filesystem identity (uid, gid, supplementary groups), so every
// component, ACLs and any security module count exactly as for the peer's own open(2).
// - the peer is mcpd's own user: opened as mcpd;
// - mcpd runs as root: opened with the peer's identity (setfsuid/setfsgid and the thread's
//   groups, switched back at once);
// - the peer is root: opened as mcpd (the child runs as mcpd, which must be able to);
// - otherwise mcpd cannot take another user's identity, and the directory is refused.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/result.h"
#include "daemon/control/peer_auth.h"

namespace mcpd {

// The canonical absolute path of `path` (which must be absolute), when `peer` may open it as a
// directory; otherwise a sentence naming the directory and why. `daemon_uid` is mcpd's
// effective uid (geteuid(); a parameter so that the rules are testable).
Result<std::string> peer_directory(const PeerCredentials& peer, std::string_view path,
                                   uid_t daemon_uid);

}  // namespace mcpd
