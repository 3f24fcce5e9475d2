#include "daemon/sandbox/kernel_support.h"

#include <linux/landlock.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string_view>

#include "config/text_file.h"

namespace mcpd::sandbox {

namespace {

int probe_landlock() {
    const long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0,
                               LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? static_cast<int>(abi) : 0;
}

// Whether a throwaway child may unshare `flags` (as nobody with `unprivileged`), so that
// mcpd's own namespaces stay as they are.
bool can_unshare(int flags, bool unprivileged = false) {
    const pid_t pid = ::fork();
    if (pid < 0) return false;
    if (pid == 0) {
        constexpr uid_t kNobody = 65534;
        if (unprivileged && ::geteuid() == 0 && (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0))
            _exit(1);
        _exit(::unshare(flags) == 0 ? 0 : 1);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return false;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The cgroup v2 mount point, from mountinfo ("... - cgroup2 cgroup2 rw").
std::string cgroup2_mount() {
    std::ifstream in("/proc/self/mountinfo");
    std::string line;
    while (std::getline(in, line)) {
        const std::size_t dash = line.find(" - cgroup2 ");
        if (dash == std::string::npos) continue;
        // Fields: id parent major:minor root mount-point ...
        std::size_t at = 0;
        for (int field = 0; field < 4 && at != std::string::npos; ++field) at = line.find(' ', at + 1);
        if (at == std::string::npos) continue;
        const std::size_t end = line.find(' ', at + 1);
        return line.substr(at + 1, end - at - 1);
    }
    return {};
}

// mcpd's own cgroup v2 directory, when it was delegated to it with the controllers a limit
// needs. systemd marks a delegated cgroup with the xattr trusted.delegate (system manager)
// or user.delegate (user manager).
std::string find_delegated_cgroup() {
    const std::string mount = cgroup2_mount();
    if (mount.empty()) return {};
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    std::string own;
    while (std::getline(in, line)) {
        if (line.starts_with("0::")) own = line.substr(3);
    }
    if (own.empty() || own == "/") return {};
    const std::string dir = mount + own;
    char value[8];
    const bool delegated = ::getxattr(dir.c_str(), "trusted.delegate", value, sizeof value) > 0 ||
                           ::getxattr(dir.c_str(), "user.delegate", value, sizeof value) > 0;
    if (!delegated || ::access(dir.c_str(), W_OK) != 0) return {};
    std::string words;
    if (config::read_text_file(dir + "/cgroup.controllers", words) != 0) return {};
    std::replace(words.begin(), words.end(), '\n', ' ');
    words = " " + words + " ";
    for (const std::string_view needed : {"memory", "pids", "cpu"}) {
        if (words.find(" " + std::string(needed) + " ") == std::string::npos) return {};
    }
    return dir;
}

KernelSupport probe() {
    KernelSupport support;
    support.landlock_abi = probe_landlock();
    if (::geteuid() == 0 && can_unshare(CLONE_NEWNS | CLONE_NEWNET)) {
        support.namespaces = true;
    } else if (can_unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET)) {
        support.namespaces = true;
        support.through_user_namespace = true;
    }
    support.unprivileged_user_namespaces = can_unshare(CLONE_NEWUSER, true);
    support.cgroup = delegated_cgroup();
    return support;
}

}  // namespace

const std::string& delegated_cgroup() {
    static const std::string dir = find_delegated_cgroup();
    return dir;
}

const KernelSupport& kernel_support() {
    static const KernelSupport support = probe();
    return support;
}

std::vector<std::string> describe(const KernelSupport& support) {
    std::vector<std::string> lines;
    if (support.landlock_abi == 0) {
        lines.push_back("Landlock: not available: path rules cannot be enforced");
    } else {
        std::string what = "filesystem rules";
        if (support.landlock_abi >= 4) what += ", TCP bind and connect rules";
        if (support.landlock_abi >= 6) what += ", signal and abstract socket scoping";
        lines.push_back("Landlock ABI " + std::to_string(support.landlock_abi) + ": " + what);
    }
    if (!support.namespaces) {
        lines.push_back("namespaces: not allowed (mcpd is not root and user namespaces are "
                        "restricted): no private network, hidden paths by Landlock only");
    } else {
        lines.push_back(support.through_user_namespace
                            ? "namespaces: through a user namespace per child"
                            : "namespaces: created as root");
    }
    lines.push_back(support.cgroup.empty()
                        ? "cgroup: none delegated to mcpd: memory, tasks and open_files use "
                          "rlimits, cpu cannot be limited, OOM kills are not counted"
                        : "cgroup: " + support.cgroup + " (delegated): a leaf per server");
    return lines;
}

}  // namespace mcpd::sandbox
