// Carrying out a sandbox plan in the forked child, before exec. Everything the child needs is
// prepared in the parent (paths, maps, limits as plain bytes), so the child's side makes only
// system calls: a child forked from a daemon with other threads may not allocate.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "daemon/sandbox/sandbox_plan.h"

namespace mcpd::sandbox {

// Where in the child a sandbox step failed: reported back to the parent with errno.
enum class ChildStep : int {
    none = 0,
    unshare,
    user_map,
    mount_private,
    hide,
    loopback,
    rlimit,
    no_new_privs,
    landlock_ruleset,
    landlock_rule,
    landlock_restrict,
};

// What failed, for the start error: "cannot create the sandbox's namespaces".
std::string describe(ChildStep step);

class ChildSandbox {
public:
    // `plan` for a child of mcpd (uid and gid `own_uid`/`own_gid`) that runs as
    // `child_uid`/`child_gid`: a user namespace maps its user onto itself.
    ChildSandbox(const Plan& plan, uid_t own_uid, gid_t own_gid, uid_t child_uid,
                 gid_t child_gid);

    bool active() const { return active_; }

    // In the child, before its identity changes: namespaces, hidden paths, limits.
    // Async-signal-safe; on failure errno is set and the step is returned.
    ChildStep enter() const;

    // In the child, last before exec (as the user it runs as, in its directory): Landlock.
    ChildStep restrict() const;

private:
    struct Grant {
        std::string path;
        unsigned long long access = 0;
    };
    bool active_ = false;
    int unshare_flags_ = 0;
    bool user_namespace_ = false;
    std::string uid_map_;
    std::string gid_map_;
    std::string child_uid_map_;
    std::string child_gid_map_;
    rlim_t tasks_ = 0;
    bool mount_namespace_ = false;
    std::vector<std::string> hidden_;
    bool loopback_up_ = false;
    std::vector<ResourceLimit> rlimits_;
    int landlock_abi_ = 0;
    bool landlock_ = false;
    unsigned long long handled_fs_ = 0;
    unsigned long long handled_net_ = 0;
    unsigned long long scoped_ = 0;
    std::vector<Grant> grants_;
};

}  // namespace mcpd::sandbox
