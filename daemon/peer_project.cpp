#include "daemon/peer_project.h"

#include <algorithm>

#include "common/accounts.h"
#include "daemon/control/peer_directory.h"

namespace mcpd {

config::ChildIdentity child_identity(const PeerCredentials& peer) {
    config::ChildIdentity identity{peer.uid, peer.gid, {}, std::to_string(peer.uid), "/"};
    for (const gid_t group : peer_groups(peer)) {
        if (group != peer.gid) identity.groups.push_back(group);
    }
    if (const std::optional<accounts::Account> account = accounts::account_of(peer.uid)) {
        identity.user = account->name;
        if (!account->home.empty()) identity.home = account->home;
    }
    return identity;
}

Result<Project> project_for_peer(const Project& project, const PeerCredentials& peer,
                                 uid_t daemon_uid) {
    Project checked = project;
    checked.user = peer.uid;
    checked.roots.clear();
    for (const std::string& root : project.roots) {
        const std::optional<std::string> path = file_uri_path(root);
        if (!path) {
            checked.roots.push_back(root);  // another scheme: no directory, nothing to open
            continue;
        }
        Result<std::string> canonical = peer_directory(peer, *path, daemon_uid);
        if (!canonical) return canonical.failure();
        checked.roots.push_back(directory_uri(canonical.value()));
    }
    Result<std::string> directory = peer_directory(peer, project.directory, daemon_uid);
    if (!directory) return directory.failure();
    checked.directory = std::move(directory).value();
    if (daemon_uid == 0 && peer.uid != 0) checked.identity = child_identity(peer);
    std::sort(checked.roots.begin(), checked.roots.end());
    checked.roots.erase(std::unique(checked.roots.begin(), checked.roots.end()),
                        checked.roots.end());
    return checked;
}

ChildQuota child_quota(const config::ServerConfig& server, const PeerCredentials& peer,
                       bool trusted) {
    unsigned per_user = server.max_children_per_user;
    if (per_user == 0 && server.max_children > 0) per_user = std::max(1U, server.max_children / 2);
    return ChildQuota{server.max_children, per_user, peer.uid, trusted};
}

}  // namespace mcpd
