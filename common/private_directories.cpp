#include "common/private_directories.h"

#include <sys/stat.h>

#include <cerrno>

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

}  // namespace mcpd
