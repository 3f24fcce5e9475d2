// What a server's sandbox comes to for one child on this machine: its path rules resolved
// (placeholders filled in, hidden paths cut out), the mechanisms that enforce each rule, and a
// sentence for each rule the kernel or mcpd's privileges cannot enforce. Pure: the kernel's
// abilities and the directory listings come in as arguments.
#pragma once

#include <sys/resource.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/sandbox.h"
#include "daemon/sandbox/cgroup_leaf.h"
#include "daemon/sandbox/kernel_support.h"

namespace mcpd::sandbox {

// The values the placeholders of a child's path rules stand for.
struct Placeholders {
    std::string home;     // ~: the home of the user the child runs as
    std::string project;  // {project}: its project's directory (or its cwd); empty: none
    std::string cache;    // {cache}: mcpd's cache directory for this server
    std::string state;    // {state}: mcpd's state directory for this server
};

// The user the child runs as, for the rules that depend on it.
struct ChildUser {
    bool root = false;            // uid 0: rlimits can be raised back, RLIMIT_NPROC is ignored
    bool other_than_mcpd = false;  // not mcpd's own user (a project's child on a root daemon)
};

struct PathGrant {
    std::string path;
    bool write = false;  // else read (and execute)
    bool operator==(const PathGrant&) const = default;
};

struct ResourceLimit {
    int resource = 0;  // RLIMIT_*
    rlim_t value = 0;
    bool operator==(const ResourceLimit&) const = default;
};

struct Plan {
    bool active = false;  // anything to apply at all
    // Landlock over the filesystem: the grants, after hidden paths were cut out of them.
    bool restrict_filesystem = false;
    std::vector<PathGrant> grants;
    // Paths covered by an empty read-only tmpfs in the child's mount namespace.
    std::vector<std::string> hidden;
    config::NetworkAccess network = config::NetworkAccess::all;
    bool landlock_tcp = false;  // Landlock denies every TCP bind and connect
    bool scope = false;         // Landlock scopes signals and abstract unix sockets
    bool mount_namespace = false;
    bool network_namespace = false;
    bool loopback_up = false;
    bool user_namespace = false;
    int landlock_abi = 0;
    std::vector<ResourceLimit> rlimits;
    // RLIMIT_NPROC, set inside a user namespace of the child's own so that it counts the
    // box's processes only (Linux 5.14 and later): the one above when there is one, else one
    // made after the child took its user's identity. 0: none.
    rlim_t tasks = 0;
    // Limits the child's cgroup leaf holds, where mcpd has a delegated cgroup.
    CgroupLimits cgroup;
    // How each rule is enforced ("network none: a private network namespace"), for the
    // start log and `status`.
    std::vector<std::string> enforced;
    // Each rule this machine cannot enforce, as a sentence that says what would.
    std::vector<std::string> unenforced;
};

// A directory's entry names, or nullopt when it cannot be listed (then a rule over it is
// kept whole and the hidden path under it relies on the mount namespace).
using ListDirectory = std::function<std::optional<std::vector<std::string>>(const std::string&)>;

// `path` with its placeholder resolved, normalised; empty when the placeholder has no value
// here ({project} for a server with neither a project nor a cwd).
std::string resolve_rule_path(const std::string& path, const Placeholders& values);

// The grants with every hidden path cut out: a grant over a directory that holds a hidden
// path becomes grants for each of its entries but the one leading there, down to the hidden
// path; a grant at or under a hidden path goes.
std::vector<PathGrant> cut_out_hidden(const std::vector<PathGrant>& grants,
                                      const std::vector<std::string>& hidden,
                                      const ListDirectory& list);

// The plan for `sandbox`. `command` is the resolved executable: its installation prefix is
// readable whatever the rules say, so a server from ~/.nvm or /opt starts.
Plan make_plan(const config::Sandbox& sandbox, const Placeholders& values,
               const KernelSupport& support, const ChildUser& user, const std::string& command,
               const ListDirectory& list);

// The installation prefix of an executable: /x/y for /x/y/bin/prog, else its directory.
std::string install_prefix(const std::string& executable);

}  // namespace mcpd::sandbox
