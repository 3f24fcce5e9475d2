// Who may be behind the socket mcpctl talks to. Before mcpctl sends a byte (a request, an
// agent's stdin and stdout), it reads the listener's uid (SO_PEERCRED) and goes on only when
// that is its own user, root, the system service's user on the system socket, or the user
// named in $MCPD_SOCKET_OWNER. Anyone else listening there is an impostor: another local user
// who got to the socket path first would otherwise read the agent's session and answer it.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/result.h"

namespace mcpctl {

struct ListenerPolicy {
    uid_t self = 0;
    std::optional<uid_t> service_user;  // the `mcpd` user, on the system socket only
    std::optional<uid_t> named_owner;   // $MCPD_SOCKET_OWNER
};

// The service user that runs the system unit (systemd/mcpd.sysusers).
inline constexpr const char* kServiceUser = "mcpd";

// The policy for `socket_path`; `owner_env` is $MCPD_SOCKET_OWNER (a user name or uid), or
// null. Fails when it names no user.
mcpd::Result<ListenerPolicy> listener_policy(const std::string& socket_path, const char* owner_env);

// Nothing when `listener` may be trusted; otherwise the sentence refusing it, naming both uids.
std::optional<std::string> distrust(uid_t listener, const ListenerPolicy& policy,
                                    const std::string& socket_path);

// The uid of the process listening on connected socket `fd`; nullopt if it cannot be read.
std::optional<uid_t> listener_uid(int fd);

}  // namespace mcpctl
