#include "common/private_directories.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace mcpd {

Result<Done> make_private_directories(const std::string& directory) {
    std::string path;
    std::size_t from = 0;
    while (from <= directory.size()) {
        const std::size_t slash = directory.find('/', from);
        const std::size_t end = slash == std::string::npos ? directory.size() : slash;
        path = directory.substr(0, end);
        from = end + 1;
        if (path.empty()) continue;
        if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
            return system_failure("cannot create " + path, errno);
        if (slash == std::string::npos) break;
    }
    return Done{};
}

namespace {

// systemd's `systemd_variable` (its first directory: it may give several, separated by
// colons), else $`xdg_variable`/mcpd, else HOME + `under_home`.
std::string own_directory(const char* systemd_variable, const char* xdg_variable,
                          const char* under_home) {
    if (const char* given = std::getenv(systemd_variable); given != nullptr && *given == '/') {
        const std::string all(given);
        return all.substr(0, all.find(':'));
    }
    if (const char* xdg = std::getenv(xdg_variable); xdg != nullptr && *xdg == '/')
        return std::string(xdg) + "/mcpd";
    if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/')
        return std::string(home) + under_home;
    return {};
}

}  // namespace

std::string own_state_directory() {
    return own_directory("STATE_DIRECTORY", "XDG_STATE_HOME", "/.local/state/mcpd");
}

std::string own_cache_directory() {
    return own_directory("CACHE_DIRECTORY", "XDG_CACHE_HOME", "/.cache/mcpd");
}

}  // namespace mcpd
