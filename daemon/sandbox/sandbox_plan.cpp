#include "daemon/sandbox/sandbox_plan.h"

#include <algorithm>
#include <filesystem>

namespace mcpd::sandbox {

namespace {

using config::NetworkAccess;

// A directory holding more entries than this is granted whole rather than entry by entry.
constexpr std::size_t kMaxCutGrants = 4096;

std::string normal(const std::string& path) {
    std::string out = std::filesystem::path(path).lexically_normal().string();
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    return out;
}

bool is_under(const std::string& path, const std::string& dir) {
    if (dir == "/") return path.size() > 1 && path.front() == '/';
    return path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/';
}

std::string join(const std::string& dir, const std::string& name) {
    return dir == "/" ? "/" + name : dir + "/" + name;
}

// Grants for `dir`'s entries but the hidden ones, recursing towards each hidden path.
// False when a directory on the way cannot be listed or is too large (then `dir` is
// granted whole).
bool grant_around(const PathGrant& grant, const std::vector<std::string>& hidden_below,
                  const ListDirectory& list, std::vector<PathGrant>& out) {
    const std::optional<std::vector<std::string>> entries = list(grant.path);
    if (!entries || entries->size() > kMaxCutGrants) {
        out.push_back(grant);
        return false;
    }
    bool whole = true;
    for (const std::string& name : *entries) {
        if (name == "." || name == "..") continue;
        const std::string child = join(grant.path, name);
        if (std::find(hidden_below.begin(), hidden_below.end(), child) != hidden_below.end())
            continue;
        std::vector<std::string> deeper;
        for (const std::string& h : hidden_below) {
            if (is_under(h, child)) deeper.push_back(h);
        }
        const PathGrant entry{child, grant.write};
        if (deeper.empty()) {
            out.push_back(entry);
        } else {
            whole = grant_around(entry, deeper, list, out) && whole;
        }
    }
    return whole;
}

// The limits a delegated cgroup's leaf holds: the whole tree, root's processes too.
void plan_cgroup_limits(const config::Sandbox& sandbox, Plan& plan) {
    if (sandbox.memory) {
        plan.cgroup.memory = sandbox.memory;
        plan.enforced.push_back("memory " + std::to_string(*sandbox.memory >> 20) +
                                " MiB: memory.max of its cgroup (the kernel's OOM killer ends "
                                "it past that)");
    }
    if (sandbox.tasks) {
        plan.cgroup.tasks = sandbox.tasks;
        plan.enforced.push_back("tasks " + std::to_string(*sandbox.tasks) +
                                ": pids.max of its cgroup");
    }
    if (sandbox.cpu) {
        plan.cgroup.cpu = sandbox.cpu;
        plan.enforced.push_back("cpu " + config::to_string(*sandbox.cpu) + ": " +
                                (sandbox.cpu->kind == config::CpuLimit::Kind::quota
                                     ? "cpu.max"
                                     : "cpu.weight") +
                                " of its cgroup");
    }
}

// The rlimits and how they hold, or why they cannot.
void plan_limits(const config::Sandbox& sandbox, const KernelSupport& support,
                 const ChildUser& user, Plan& plan) {
    const std::string raise_back =
        user.root ? " (a server running as root could raise it again)" : "";
    if (sandbox.open_files) {
        plan.rlimits.push_back({RLIMIT_NOFILE, static_cast<rlim_t>(*sandbox.open_files)});
        plan.enforced.push_back("open_files " + std::to_string(*sandbox.open_files) +
                                ": RLIMIT_NOFILE" + raise_back);
    }
    if (!support.cgroup.empty()) {
        plan_cgroup_limits(sandbox, plan);
        return;
    }
    if (sandbox.memory) {
        plan.rlimits.push_back({RLIMIT_DATA, static_cast<rlim_t>(*sandbox.memory)});
        plan.enforced.push_back("memory " + std::to_string(*sandbox.memory >> 20) +
                                " MiB: RLIMIT_DATA, the writable memory of each process" +
                                raise_back);
    }
    if (sandbox.tasks) {
        // RLIMIT_NPROC counts the processes of a user; inside a user namespace of the box's
        // own, only the ones in it.
        if (!user.root && support.unprivileged_user_namespaces) {
            plan.tasks = static_cast<rlim_t>(*sandbox.tasks);
            plan.enforced.push_back("tasks " + std::to_string(*sandbox.tasks) +
                                    ": RLIMIT_NPROC in a user namespace of its own");
        } else {
            plan.unenforced.push_back(
                "tasks: without a delegated cgroup the only limit is RLIMIT_NPROC, which " +
                std::string(user.root ? "never applies to root"
                                      : "counts every process of the server's user unless "
                                        "user namespaces are allowed") +
                "; run mcpd under systemd with Delegate=yes to limit a server's processes");
        }
    }
    if (sandbox.cpu) {
        plan.unenforced.push_back("cpu " + config::to_string(*sandbox.cpu) +
                                  ": a CPU limit needs a delegated cgroup v2 with the cpu "
                                  "controller (run mcpd under systemd with Delegate=yes)");
    }
}

void plan_network(NetworkAccess network, const KernelSupport& support, Plan& plan) {
    plan.network = network;
    if (network == NetworkAccess::all) return;
    if (support.namespaces) {
        plan.network_namespace = true;
        plan.user_namespace = plan.user_namespace || support.through_user_namespace;
        plan.loopback_up = network == NetworkAccess::loopback;
        plan.enforced.push_back(network == NetworkAccess::none
                                    ? "network none: a private network namespace, no interface up"
                                    : "network loopback: a private network namespace with only "
                                      "its own loopback interface");
    }
    if (network == NetworkAccess::none && support.landlock_abi >= 4) {
        plan.landlock_tcp = true;
        plan.enforced.push_back("network none: Landlock denies every TCP bind and connect");
    }
    if (support.namespaces) return;
    if (network == NetworkAccess::none && plan.landlock_tcp) {
        plan.unenforced.push_back(
            "network none: without a network namespace UDP stays open (Landlock rules only TCP); "
            "run mcpd as root or allow unprivileged user namespaces");
    } else if (network == NetworkAccess::none) {
        plan.unenforced.push_back(
            "network none: needs a network namespace (mcpd as root, or unprivileged user "
            "namespaces) or Landlock ABI 4 (Linux 6.7)");
    } else {
        plan.unenforced.push_back(
            "network loopback: needs a network namespace: run mcpd as root or allow "
            "unprivileged user namespaces");
    }
}

// What an older Landlock leaves open under path rules, said beside them.
std::string landlock_gaps(int abi) {
    std::string gaps;
    if (abi < 3) gaps += "truncating a file it may only read (ABI 3, Linux 6.2)";
    if (abi < 5) gaps += std::string(gaps.empty() ? "" : ", ") + "ioctl on devices (ABI 5, Linux 6.10)";
    if (abi < 6)
        gaps += std::string(gaps.empty() ? "" : ", ") +
                "signals to processes outside the box (ABI 6, Linux 6.12)";
    return gaps.empty() ? std::string() : " (this ABI leaves open: " + gaps + ")";
}

}  // namespace

std::string resolve_rule_path(const std::string& path, const Placeholders& values) {
    const auto with = [&](std::string_view prefix, const std::string& value) -> std::string {
        if (value.empty()) return {};
        return normal(value + path.substr(prefix.size()));
    };
    if (path == "~" || path.starts_with("~/")) return with("~", values.home);
    if (path.starts_with(config::kProjectPlaceholder))
        return with(config::kProjectPlaceholder, values.project);
    if (path.starts_with(config::kCachePlaceholder))
        return with(config::kCachePlaceholder, values.cache);
    if (path.starts_with(config::kStatePlaceholder))
        return with(config::kStatePlaceholder, values.state);
    if (path.starts_with('/')) return normal(path);
    return {};
}

std::vector<PathGrant> cut_out_hidden(const std::vector<PathGrant>& grants,
                                      const std::vector<std::string>& hidden,
                                      const ListDirectory& list) {
    std::vector<PathGrant> out;
    for (const PathGrant& grant : grants) {
        bool gone = false;
        std::vector<std::string> below;
        for (const std::string& h : hidden) {
            if (grant.path == h || is_under(grant.path, h)) gone = true;
            if (is_under(h, grant.path)) below.push_back(h);
        }
        if (gone) continue;
        if (below.empty()) {
            out.push_back(grant);
        } else {
            grant_around(grant, below, list, out);
        }
    }
    return out;
}

std::string install_prefix(const std::string& executable) {
    const std::filesystem::path dir = std::filesystem::path(executable).parent_path();
    if (dir.filename() == "bin" && dir.has_parent_path() && dir.parent_path() != "/")
        return dir.parent_path().string();
    return dir.string();
}

Plan make_plan(const config::Sandbox& sandbox, const Placeholders& values,
               const KernelSupport& support, const ChildUser& user, const std::string& command,
               const ListDirectory& list) {
    Plan plan;
    if (!sandbox.any()) return plan;
    plan.active = true;
    plan.landlock_abi = support.landlock_abi;

    const config::PathRules rules = config::path_rules(sandbox);
    std::vector<PathGrant> grants;
    std::vector<std::string> hidden;
    const auto add = [&](const std::vector<std::string>& paths, bool write) {
        for (const std::string& path : paths) {
            std::string resolved = resolve_rule_path(path, values);
            if (!resolved.empty()) grants.push_back({std::move(resolved), write});
        }
    };
    add(rules.read, false);
    add(rules.write, true);
    for (const std::string& path : rules.hide) {
        std::string resolved = resolve_rule_path(path, values);
        if (!resolved.empty() && resolved != "/") hidden.push_back(std::move(resolved));
    }
    const bool has_path_rules = !rules.read.empty() || !rules.write.empty() || !rules.hide.empty();
    if (has_path_rules) {
        if (!command.empty()) grants.push_back({install_prefix(command), false});
        if (support.landlock_abi >= 1) {
            plan.restrict_filesystem = true;
            // Where a mount namespace covers hidden paths, a tree that holds one is granted
            // whole (it stays listable); elsewhere it is cut out entry by entry, so a hidden
            // path under a readable tree stays out of reach.
            const ListDirectory unlisted = [](const std::string&) {
                return std::optional<std::vector<std::string>>();
            };
            plan.grants = cut_out_hidden(grants, hidden, support.namespaces ? unlisted : list);
            plan.enforced.push_back("paths: Landlock ABI " + std::to_string(support.landlock_abi) +
                                    ", " + std::to_string(plan.grants.size()) + " rules" +
                                    landlock_gaps(support.landlock_abi));
        } else {
            plan.unenforced.push_back(
                "read, write and hide: this kernel has no Landlock (Linux 5.13 or later, with "
                "landlock in its lsm= list)");
        }
        if (!hidden.empty() && support.namespaces) {
            plan.mount_namespace = true;
            plan.user_namespace = support.through_user_namespace;
            plan.hidden = hidden;
            plan.enforced.push_back("hide: an empty tmpfs over each path in a private mount "
                                    "namespace");
        } else if (!hidden.empty() && !plan.restrict_filesystem) {
            plan.unenforced.push_back("hide: needs Landlock or a mount namespace");
        }
    }
    plan_network(sandbox.network.value_or(NetworkAccess::all), support, plan);
    plan_limits(sandbox, support, user, plan);
    plan.scope = support.landlock_abi >= 6;
    return plan;
}

}  // namespace mcpd::sandbox
