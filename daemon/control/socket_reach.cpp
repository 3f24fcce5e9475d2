#include "daemon/control/socket_reach.h"

#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "common/accounts.h"
#include "common/file_mode.h"

namespace mcpd {

namespace {

// Enough for any passwd entry a system is likely to hold.
constexpr std::size_t kEntryBuffer = 16384;
// More supplementary groups than any user is likely to be in.
constexpr int kMaxGroups = 1024;

// Who a file's permission bits apply to, and how.
struct Node {
    uid_t uid = 0;
    gid_t gid = 0;
    mode_t mode = 0;
};

// A user (uid and groups) or any member of one group (no uid of its own).
struct Subject {
    std::optional<uid_t> uid;
    std::vector<gid_t> groups;
};

// The owner's `bit` (S_IXUSR, S_IWUSR), or the group's or others' one, as the kernel picks the
// class: owner first, then group, then others.
bool permits(const Node& node, const Subject& subject, mode_t bit) {
    if (subject.uid && *subject.uid == node.uid) return (node.mode & bit) != 0;
    if (std::find(subject.groups.begin(), subject.groups.end(), node.gid) != subject.groups.end())
        return (node.mode & (bit >> 3)) != 0;
    return (node.mode & (bit >> 6)) != 0;
}

std::optional<Node> stat_node(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return Node{st.st_uid, st.st_gid, st.st_mode & 07777};
}

std::string describe(const std::string& what, const Node& node) {
    return what + " (mode " + mode_octal(node.mode) + ", owner " + accounts::describe_uid(node.uid) +
           ", " + accounts::describe_gid(node.gid) + ")";
}

// The directories a connect() to `path` passes through, and the socket file, as they are or
// as mcpd would leave them.
struct SocketPath {
    std::vector<std::pair<std::string, Node>> directories;
    Node socket;
};

SocketPath plan_path(const std::string& socket_path, const SocketAccess& access, bool private_dir,
                     SocketState state) {
    std::error_code error;
    const std::filesystem::path absolute =
        std::filesystem::absolute(socket_path, error).lexically_normal();
    const std::filesystem::path own_dir = absolute.parent_path();
    const uid_t me = ::geteuid();
    SocketPath out;
    std::filesystem::path dir;
    for (const auto& part : own_dir) {
        dir /= part;
        const bool socket_dir = dir == own_dir;
        std::optional<Node> node = stat_node(dir.string());
        if (!node) {
            // Created by mcpd: its parents private, its own directory open to the socket's
            // classes (socket_directory.h).
            node = Node{me, access.group.value_or(::getegid()),
                        socket_dir ? directory_mode_for(access) : mode_t{0700}};
        } else if (socket_dir && private_dir && state == SocketState::planned) {
            node->mode = directory_mode_for(access);
            if (access.group) node->gid = *access.group;
        }
        out.directories.emplace_back(dir.string(), *node);
    }
    std::optional<Node> socket;
    if (state == SocketState::bound) socket = stat_node(absolute.string());
    if (!socket) {
        const Node& parent = out.directories.empty() ? Node{} : out.directories.back().second;
        const gid_t inherited = (parent.mode & S_ISGID) != 0 ? parent.gid : ::getegid();
        socket = Node{me, access.group.value_or(inherited), access.mode};
    }
    out.socket = *socket;
    return out;
}

// What stops `subject` from connecting: "" when nothing does.
std::string blocked(const SocketPath& path, const Subject& subject) {
    for (const auto& [dir, node] : path.directories) {
        if (!permits(node, subject, S_IXUSR)) return describe("cannot search " + dir, node);
    }
    if (!permits(path.socket, subject, S_IWUSR))
        return describe("cannot write to the socket", path.socket);
    return "";
}

// A user with its primary and supplementary groups, as the group database has them.
Subject user_subject(uid_t uid) {
    Subject subject{uid, {}};
    std::vector<char> buf(kEntryBuffer);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr)
        return subject;  // no account: only the others' bits can apply
    int count = kMaxGroups;
    subject.groups.resize(static_cast<std::size_t>(count));
    if (::getgrouplist(found->pw_name, found->pw_gid, subject.groups.data(), &count) < 0) count = 0;
    subject.groups.resize(static_cast<std::size_t>(std::max(count, 0)));
    if (subject.groups.empty()) subject.groups.push_back(found->pw_gid);
    return subject;
}

}  // namespace

std::vector<UnreachablePeer> unreachable_peers(const config::Registry& registry,
                                               const std::string& socket_path,
                                               const SocketAccess& access, bool private_dir,
                                               SocketState state) {
    const SocketPath path = plan_path(socket_path, access, private_dir, state);
    const uid_t me = ::geteuid();
    // Each one once, with every server that lets it in; in the order first met.
    std::vector<UnreachablePeer> out;
    std::map<std::string, std::size_t> index;
    const auto note = [&](const std::string& who, const std::string& why,
                          const std::string& server) {
        const auto [it, added] = index.try_emplace(who, out.size());
        if (added) {
            out.push_back(UnreachablePeer{who, server, why});
            return;
        }
        UnreachablePeer& peer = out[it->second];
        if (peer.servers != server && !peer.servers.ends_with(", " + server))
            peer.servers += ", " + server;
    };
    for (const config::ServerConfig& server : registry.servers) {
        for (const std::string& user : server.allow_users) {
            const std::optional<uid_t> uid = accounts::uid_of(user);
            if (!uid || *uid == 0 || *uid == me) continue;
            if (const std::string why = blocked(path, user_subject(*uid)); !why.empty())
                note(accounts::describe_uid(*uid), why, server.name);
        }
        for (const std::string& group : server.allow_groups) {
            const std::optional<gid_t> gid = accounts::gid_of(group);
            if (!gid) continue;
            if (const std::string why = blocked(path, Subject{std::nullopt, {*gid}}); !why.empty())
                note("the members of " + accounts::describe_gid(*gid), why, server.name);
        }
    }
    return out;
}

std::string bound_socket_path(int fd) {
    sockaddr_un addr{};
    socklen_t length = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0 ||
        addr.sun_family != AF_UNIX || length <= offsetof(sockaddr_un, sun_path) ||
        addr.sun_path[0] == '\0')
        return "";
    return std::string(addr.sun_path, ::strnlen(addr.sun_path, sizeof addr.sun_path));
}

std::string unreachable_warning(const std::vector<UnreachablePeer>& peers,
                                const std::string& socket_path) {
    if (peers.empty()) return "";
    std::string text = "allow_users/allow_groups let in users who cannot reach the socket " +
                       socket_path + " and would only get \"Permission denied\": ";
    bool socket_file = false;
    bool directory = false;
    for (std::size_t i = 0; i < peers.size(); ++i) {
        const UnreachablePeer& peer = peers[i];
        text += (i == 0 ? "" : "; ") + peer.who + " (" + peer.servers + ") " + peer.blocked;
        (peer.blocked.starts_with("cannot write") ? socket_file : directory) = true;
    }
    text += ". Set";
    if (socket_file)
        text +=
            " [daemon] socket_group to a group they are in (the socket becomes 0660; mcpd's "
            "user must be a member too) or socket_mode";
    if (socket_file && directory) text += ", and";
    if (directory)
        text +=
            " [daemon] socket to a path in a directory they can search (the per-user runtime "
            "directory is private)";
    return text + "; README's \"Letting other users in\" shows the whole setup";
}

}  // namespace mcpd
