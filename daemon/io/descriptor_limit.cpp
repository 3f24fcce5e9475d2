#include "daemon/io/descriptor_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include "common/log.h"

namespace mcpd {
namespace {

// The soft limit before raise_descriptor_limit(), when it changed it.
rlimit g_original{};
bool g_raised = false;

// The kernel's ceiling for RLIMIT_NOFILE, for a hard limit of "unlimited".
rlim_t kernel_ceiling() {
    std::ifstream in("/proc/sys/fs/nr_open");
    unsigned long long value = 0;
    if (in >> value && value > 0) return static_cast<rlim_t>(value);
    return 1024 * 1024;  // the kernel's default nr_open
}

}  // namespace

std::size_t raise_descriptor_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        log::warning(std::string("cannot read the descriptor limit: ") + std::strerror(errno));
        return 0;
    }
    const rlim_t target = limit.rlim_max == RLIM_INFINITY ? kernel_ceiling() : limit.rlim_max;
    if (limit.rlim_cur == RLIM_INFINITY) return static_cast<std::size_t>(kernel_ceiling());
    if (limit.rlim_cur >= target) {
        log::debug("descriptor limit: " + std::to_string(limit.rlim_cur) + " (the hard limit)");
        return static_cast<std::size_t>(limit.rlim_cur);
    }
    const rlimit raised{target, limit.rlim_max};
    if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
        log::warning("cannot raise the descriptor limit from " + std::to_string(limit.rlim_cur) +
                     " to " + std::to_string(target) + ": " + std::strerror(errno) +
                     "; mcpd keeps " + std::to_string(limit.rlim_cur));
        return static_cast<std::size_t>(limit.rlim_cur);
    }
    g_original = limit;
    g_raised = true;
    log::debug("descriptor limit raised from " + std::to_string(limit.rlim_cur) + " to " +
               std::to_string(target) + " (the hard limit)");
    return static_cast<std::size_t>(target);
}

void restore_descriptor_limit() {
    if (g_raised) ::setrlimit(RLIMIT_NOFILE, &g_original);
}

}  // namespace mcpd
