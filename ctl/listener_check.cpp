#include "ctl/listener_check.h"

#include <sys/socket.h>
#include <unistd.h>

#include "common/accounts.h"
#include "common/socket_location.h"

namespace mcpctl {

mcpd::Result<ListenerPolicy> listener_policy(const std::string& socket_path,
                                             const char* owner_env) {
    ListenerPolicy out{::getuid(), std::nullopt, std::nullopt};
    if (socket_path == mcpd::control::kSystemSocketPath)
        out.service_user = mcpd::accounts::uid_of(kServiceUser);
    if (owner_env != nullptr && owner_env[0] != '\0') {
        out.named_owner = mcpd::accounts::uid_of(owner_env);
        if (!out.named_owner)
            return mcpd::permanent_failure(
                std::string("MCPD_SOCKET_OWNER names no user on this machine: '") + owner_env +
                "'; give a user name or a uid");
    }
    return out;
}

std::optional<std::string> distrust(uid_t listener, const ListenerPolicy& policy,
                                    const std::string& socket_path) {
    if (listener == policy.self || listener == 0) return std::nullopt;
    if (policy.service_user && listener == *policy.service_user) return std::nullopt;
    if (policy.named_owner && listener == *policy.named_owner) return std::nullopt;
    using mcpd::accounts::describe_uid;
    return "refusing to talk to " + socket_path + ": the process listening there runs as " +
           describe_uid(listener) + ", not as you (" + describe_uid(policy.self) +
           ") or root, so it is not your mcpd; another user may have put it there to read your "
           "sessions. Remove it (as root if need be), or, if you do mean to use that user's "
           "mcpd, set MCPD_SOCKET_OWNER=" +
           std::to_string(listener);
}

std::optional<uid_t> listener_uid(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
    return cred.uid;
}

}  // namespace mcpctl
