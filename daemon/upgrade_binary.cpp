// The binary an upgrade in place may exec (upgrade_binary.h).
#include "daemon/upgrade_binary.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace mcpd {

std::string running_binary() {
    char buffer[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof buffer - 1);
    if (n <= 0) return {};
    std::string path(buffer, static_cast<std::size_t>(n));
    constexpr std::string_view kDeleted = " (deleted)";
    if (path.ends_with(kDeleted)) path.resize(path.size() - kDeleted.size());
    return path;
}

namespace {

Result<Done> owned_and_closed(const std::string& what, const struct stat& st, uid_t owner,
                              bool sticky_ok) {
    if (st.st_uid != 0 && st.st_uid != owner)
        return permanent_failure(what + " belongs to uid " + std::to_string(st.st_uid) +
                                 ", neither root nor mcpd's user");
    const bool others_write = (st.st_mode & S_IWOTH) != 0;
    if (others_write && !(sticky_ok && (st.st_mode & S_ISVTX) != 0))
        return permanent_failure(what + " may be written by others");
    return Done{};
}

}  // namespace

Result<Done> check_upgrade_binary(const std::string& named, uid_t owner) {
    if (named.empty() || named.front() != '/')
        return permanent_failure("the new binary must be named by an absolute path, not '" + named +
                                 "'");
    // The file and directory that will really be run: a link's target, in its own directory.
    char* real = ::realpath(named.c_str(), nullptr);
    if (real == nullptr) return system_failure("cannot use the new binary " + named, errno);
    const std::string path(real);
    std::free(real);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return system_failure("cannot use the new binary " + path, errno);
    if (!S_ISREG(st.st_mode)) return permanent_failure(path + " is not a regular file");
    if ((st.st_mode & S_IXUSR) == 0) return permanent_failure(path + " is not executable");
    if (Result<Done> ok = owned_and_closed(path, st, owner, false); !ok) return ok;
    if ((st.st_mode & S_IWGRP) != 0) return permanent_failure(path + " may be written by its group");
    const std::string directory = path.substr(0, std::max<std::size_t>(1, path.rfind('/')));
    struct stat dir {};
    if (::stat(directory.c_str(), &dir) != 0)
        return system_failure("cannot look at " + directory, errno);
    return owned_and_closed("its directory " + directory, dir, owner, true);
}

}  // namespace mcpd
