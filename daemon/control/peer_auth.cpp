#include "daemon/control/peer_auth.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>
#include <vector>

#include "common/accounts.h"

namespace mcpd {
namespace {

// A group named in allow_groups: a number as it is (a group the database does not list may
// still be a process's), else a name the group database knows.
std::optional<gid_t> allowed_gid(const std::string& text) {
    gid_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (!text.empty() && ec == std::errc() && end == text.data() + text.size()) return value;
    return accounts::gid_of(text);
}

}  // namespace

std::vector<gid_t> peer_groups(const PeerCredentials& peer) {
    std::vector<gid_t> groups{peer.gid};
    if (peer.groups_known) {
        groups.insert(groups.end(), peer.groups.begin(), peer.groups.end());
        return groups;
    }
    std::vector<char> buf(16384);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(peer.uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
        return groups;
    }
    int count = 64;
    std::vector<gid_t> list(static_cast<std::size_t>(count));
    if (getgrouplist(found->pw_name, found->pw_gid, list.data(), &count) < 0) {
        list.resize(static_cast<std::size_t>(count));
        if (getgrouplist(found->pw_name, found->pw_gid, list.data(), &count) < 0) return groups;
    }
    list.resize(static_cast<std::size_t>(count));
    groups.insert(groups.end(), list.begin(), list.end());
    return groups;
}

std::optional<PeerCredentials> peer_credentials(int socket_fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
    PeerCredentials peer{cred.pid, cred.uid, cred.gid};
    std::vector<gid_t> groups(64);
    for (int attempt = 0; attempt < 2; ++attempt) {
        socklen_t size = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
        if (getsockopt(socket_fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &size) == 0) {
            groups.resize(size / sizeof(gid_t));
            peer.groups = std::move(groups);
            peer.groups_known = true;
            break;
        }
        if (errno != ERANGE) break;  // an older kernel: the group database it is
        groups.resize(size / sizeof(gid_t) + 1);
    }
    return peer;
}

bool is_privileged_peer(const PeerCredentials& peer, uid_t owner) {
    return peer.uid == 0 || peer.uid == owner;
}

bool peer_allowed_for(const PeerCredentials& peer, const config::ServerConfig& server) {
    for (const std::string& user : server.allow_users) {
        if (accounts::uid_of(user) == peer.uid) return true;
    }
    if (server.allow_groups.empty()) return false;
    const std::vector<gid_t> groups = peer_groups(peer);
    for (const std::string& name : server.allow_groups) {
        const std::optional<gid_t> gid = allowed_gid(name);
        if (!gid) continue;
        for (gid_t g : groups) {
            if (g == *gid) return true;
        }
    }
    return false;
}

bool peer_may_connect(const PeerCredentials& peer, const config::Registry& registry, uid_t owner) {
    if (is_privileged_peer(peer, owner)) return true;
    for (const config::ServerConfig& server : registry.servers) {
        if (peer_allowed_for(peer, server)) return true;
    }
    return false;
}

}  // namespace mcpd
