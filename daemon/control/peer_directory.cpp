#include "daemon/control/peer_directory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/terminal_text.h"
#include "common/unique_fd.h"
#include "daemon/control/filesystem_identity.h"

namespace mcpd {

namespace {

// A peer's path in a sentence: control characters escaped, and cut (a path may be 4 KiB).
std::string shown(std::string_view path) {
    constexpr std::size_t kShown = 256;
    std::string out = escape_controls(path.substr(0, kShown));
    if (path.size() > kShown) out += "...";
    return out;
}

// Resolve and open `path` with the identity in force now.
Result<std::string> open_directory(std::string_view path, const std::string& who) {
    const std::string text(path);
    std::unique_ptr<char, decltype(&std::free)> resolved(realpath(text.c_str(), nullptr),
                                                         &std::free);
    if (resolved == nullptr) {
        const int error = errno;
        return permanent_failure("the directory " + shown(path) + " cannot be used as a project: " +
                                 who + " cannot resolve it (" + std::strerror(error) + ")");
    }
    const UniqueFd fd(::open(resolved.get(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) {
        const int error = errno;
        return permanent_failure("the directory " + shown(path) + " cannot be used as a project: " +
                                 who + " cannot open it (" + std::strerror(error) + ")");
    }
    return std::string(resolved.get());
}

}  // namespace

Result<std::string> peer_directory(const PeerCredentials& peer, std::string_view path,
                                   uid_t daemon_uid) {
    if (path.empty() || path.front() != '/' || path.find('\0') != std::string_view::npos) {
        return permanent_failure("the directory " + shown(path) +
                                 " cannot be used as a project: it is not an absolute path");
    }
    const std::string uid = "uid " + std::to_string(peer.uid);
    if (peer.uid == daemon_uid) return open_directory(path, uid);
    if (peer.uid == 0) return open_directory(path, "mcpd (uid " + std::to_string(daemon_uid) + ")");
    if (daemon_uid != 0) {
        return permanent_failure(
            "the directory " + shown(path) + " cannot be used as a project for " + uid +
            ": mcpd runs as uid " + std::to_string(daemon_uid) +
            ", not as root, so it cannot check that " + uid +
            " may open it; a server with sharing = \"project\" or \"user\" serves other users "
            "only from a daemon that runs as root");
    }
    const FilesystemIdentity identity(peer.uid, peer.gid, peer_groups(peer));
    if (!identity.taken()) {
        return permanent_failure("the directory " + shown(path) +
                                 " cannot be used as a project: mcpd could not take " + uid +
                                 "'s identity to open it (it lacks CAP_SETUID or CAP_SETGID)");
    }
    return open_directory(path, uid);
}

}  // namespace mcpd
