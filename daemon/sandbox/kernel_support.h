// What the running kernel and mcpd's privileges let a sandbox enforce, probed once.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mcpd::sandbox {

struct KernelSupport {
    // Landlock's ABI version: 0 when the kernel has none (or it is disabled); 1 restricts
    // the filesystem, 4 adds TCP bind and connect, 6 scopes signals and abstract sockets.
    int landlock_abi = 0;
    // A child may get mount and network namespaces of its own: mcpd may create them itself
    // (root), or inside a user namespace of the child's own.
    bool namespaces = false;
    bool through_user_namespace = false;  // they need the user namespace (mcpd is not root)
    // An unprivileged process may create a user namespace (Debian's default; Ubuntu 24.04
    // and others restrict it): what counts a box's processes on its own (RLIMIT_NPROC).
    bool unprivileged_user_namespaces = false;
    // The cgroup v2 directory delegated to mcpd (systemd's Delegate=yes), with the memory,
    // pids and cpu controllers: each server then gets a leaf there. Empty: rlimits only.
    std::string cgroup;

    bool operator==(const KernelSupport&) const = default;
};

// Probe this machine (a throwaway child tries the namespaces). Cached after the first call.
const KernelSupport& kernel_support();

// Only the delegated cgroup (KernelSupport::cgroup), found without starting a process: what
// every server's start asks, boxed or not. Cached after the first call.
const std::string& delegated_cgroup();

// One line each, for --check-config and the start log: "Landlock ABI 7: filesystem and TCP
// rules", "namespaces: yes (as root)", "cgroup: none delegated: limits use rlimits".
std::vector<std::string> describe(const KernelSupport& support);

}  // namespace mcpd::sandbox
