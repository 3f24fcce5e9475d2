#include "daemon/sandbox/sandbox_child.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "common/unique_fd.h"

namespace mcpd::sandbox {

namespace {

// Itself, mapped onto itself: its files and its processes stay its own.
bool map_user(const std::string& uid_map, const std::string& gid_map);

// Landlock's interface as the kernel defines it; Debian 12's headers stop at ABI 2.
struct RulesetAttr {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;
    std::uint64_t scoped;
};
constexpr std::uint64_t kFsTruncate = 1ULL << 14;   // ABI 3
constexpr std::uint64_t kFsIoctlDev = 1ULL << 15;   // ABI 5
constexpr std::uint64_t kNetBindTcp = 1ULL << 0;    // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ULL << 1;
constexpr std::uint64_t kScopeAbstractUnix = 1ULL << 0;  // ABI 6
constexpr std::uint64_t kScopeSignal = 1ULL << 1;

constexpr std::uint64_t kRead =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
// The rights that make sense on a file that is not a directory.
constexpr std::uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                      LANDLOCK_ACCESS_FS_READ_FILE | kFsTruncate | kFsIoctlDev;

std::uint64_t filesystem_rights(int abi) {
    std::uint64_t rights = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
    if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) rights |= kFsTruncate;
    if (abi >= 5) rights |= kFsIoctlDev;
    return rights;
}

// The size of the ruleset attribute this ABI knows.
std::size_t ruleset_size(int abi) {
    if (abi >= 6) return sizeof(RulesetAttr);
    if (abi >= 4) return offsetof(RulesetAttr, scoped);
    return offsetof(RulesetAttr, handled_access_net);
}

bool write_file(const char* path, std::string_view text) {
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    const ssize_t n = ::write(fd, text.data(), text.size());
    const int err = errno;
    ::close(fd);
    errno = err;
    return n == static_cast<ssize_t>(text.size());
}

bool map_user(const std::string& uid_map, const std::string& gid_map) {
    return write_file("/proc/self/setgroups", "deny\n") &&
           write_file("/proc/self/gid_map", gid_map) && write_file("/proc/self/uid_map", uid_map);
}

bool limit_tasks(rlim_t tasks) {
    const struct rlimit value{tasks, tasks};
    return ::setrlimit(RLIMIT_NPROC, &value) == 0;
}

// An empty tmpfs over a directory, /dev/null over anything else; a path that is not there
// needs no hiding.
bool hide(const std::string& path) {
    struct stat st {};
    // What the mount will cover: a symbolic link's target.
    if (::stat(path.c_str(), &st) != 0) return errno == ENOENT || errno == EACCES;
    if (S_ISDIR(st.st_mode)) {
        return ::mount("mcpd-hidden", path.c_str(), "tmpfs",
                       MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=000") == 0;
    }
    return ::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) == 0;
}

bool bring_loopback_up() {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    struct ifreq request {};
    std::memcpy(request.ifr_name, "lo", 3);
    bool ok = ::ioctl(fd, SIOCGIFFLAGS, &request) == 0;
    if (ok) {
        request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
        ok = ::ioctl(fd, SIOCSIFFLAGS, &request) == 0;
    }
    const int err = errno;
    ::close(fd);
    errno = err;
    return ok;
}

}  // namespace

std::string describe(ChildStep step) {
    switch (step) {
        case ChildStep::none:
            return "the sandbox";
        case ChildStep::unshare:
            return "cannot create the sandbox's namespaces";
        case ChildStep::user_map:
            return "cannot map the user into the sandbox's user namespace";
        case ChildStep::mount_private:
            return "cannot make the sandbox's mounts private";
        case ChildStep::hide:
            return "cannot hide a path of the sandbox's hide list";
        case ChildStep::loopback:
            return "cannot bring up the sandbox's loopback interface";
        case ChildStep::rlimit:
            return "cannot set the sandbox's resource limits";
        case ChildStep::no_new_privs:
            return "cannot set no_new_privs for the sandbox";
        case ChildStep::landlock_ruleset:
            return "cannot create the sandbox's Landlock ruleset";
        case ChildStep::landlock_rule:
            return "cannot add a path rule to the sandbox's Landlock ruleset";
        case ChildStep::landlock_restrict:
            return "cannot enforce the sandbox's Landlock ruleset";
    }
    return "the sandbox";
}

ChildSandbox::ChildSandbox(const Plan& plan, uid_t own_uid, gid_t own_gid, uid_t child_uid,
                           gid_t child_gid) {
    active_ = plan.active;
    if (!active_) return;
    user_namespace_ = plan.user_namespace;
    mount_namespace_ = plan.mount_namespace;
    if (plan.user_namespace) unshare_flags_ |= CLONE_NEWUSER;
    if (plan.mount_namespace) unshare_flags_ |= CLONE_NEWNS;
    if (plan.network_namespace) unshare_flags_ |= CLONE_NEWNET;
    const auto map = [](unsigned id) {
        return std::to_string(id) + " " + std::to_string(id) + " 1\n";
    };
    uid_map_ = map(own_uid);
    gid_map_ = map(own_gid);
    child_uid_map_ = map(child_uid);
    child_gid_map_ = map(child_gid);
    tasks_ = plan.tasks;
    hidden_ = plan.hidden;
    loopback_up_ = plan.loopback_up;
    rlimits_ = plan.rlimits;
    landlock_abi_ = plan.landlock_abi;
    if (plan.restrict_filesystem) handled_fs_ = filesystem_rights(plan.landlock_abi);
    if (plan.landlock_tcp) handled_net_ = kNetBindTcp | kNetConnectTcp;
    if (plan.scope) {
        scoped_ = kScopeSignal;
        if (plan.network != config::NetworkAccess::all) scoped_ |= kScopeAbstractUnix;
    }
    landlock_ = handled_fs_ != 0 || handled_net_ != 0 || scoped_ != 0;
    for (const PathGrant& grant : plan.grants) {
        grants_.push_back({grant.path, grant.write ? handled_fs_ : (kRead & handled_fs_)});
    }
}

ChildStep ChildSandbox::enter() const {
    if (!active_) return ChildStep::none;
    if (unshare_flags_ != 0 && ::unshare(unshare_flags_) != 0) return ChildStep::unshare;
    if (user_namespace_) {
        if (!map_user(uid_map_, gid_map_)) return ChildStep::user_map;
        // Counted in this namespace: the box's processes only.
        if (tasks_ > 0 && !limit_tasks(tasks_)) return ChildStep::rlimit;
    }
    if (mount_namespace_) {
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
            return ChildStep::mount_private;
        for (const std::string& path : hidden_) {
            if (!hide(path)) return ChildStep::hide;
        }
    }
    if (loopback_up_ && !bring_loopback_up()) return ChildStep::loopback;
    for (const ResourceLimit& limit : rlimits_) {
        const struct rlimit value{limit.value, limit.value};
        if (::setrlimit(limit.resource, &value) != 0) return ChildStep::rlimit;
    }
    return ChildStep::none;
}

ChildStep ChildSandbox::restrict() const {
    if (!active_) return ChildStep::none;
    if (tasks_ > 0 && !user_namespace_) {
        // A user namespace of its own, made as the user it runs as (a child of a root mcpd).
        // The identity change left /proc/self owned by root: dumpable again, so this process
        // may write its own maps (exec sets it anew for the server).
        if (::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0 || ::unshare(CLONE_NEWUSER) != 0)
            return ChildStep::unshare;
        if (!map_user(child_uid_map_, child_gid_map_)) return ChildStep::user_map;
        if (!limit_tasks(tasks_)) return ChildStep::rlimit;
    }
    if (!landlock_) return ChildStep::none;
    RulesetAttr attr{handled_fs_, handled_net_, scoped_};
    const int ruleset = static_cast<int>(
        ::syscall(SYS_landlock_create_ruleset, &attr, ruleset_size(landlock_abi_), 0U));
    if (ruleset < 0) return ChildStep::landlock_ruleset;
    const UniqueFd owned(ruleset);
    for (const Grant& grant : grants_) {
        const int fd = ::open(grant.path.c_str(), O_PATH | O_CLOEXEC);
        // A path that is not there, or that this user may not reach, grants nothing.
        if (fd < 0) continue;
        struct stat st {};
        struct landlock_path_beneath_attr rule {};
        rule.parent_fd = fd;
        rule.allowed_access = grant.access;
        if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rule.allowed_access &= kFileRights;
        const long added = rule.allowed_access == 0
                               ? 0
                               : ::syscall(SYS_landlock_add_rule, ruleset,
                                           LANDLOCK_RULE_PATH_BENEATH, &rule, 0U);
        const int err = errno;
        ::close(fd);
        if (added != 0) {
            errno = err;
            return ChildStep::landlock_rule;
        }
    }
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return ChildStep::no_new_privs;
    if (::syscall(SYS_landlock_restrict_self, ruleset, 0U) != 0) return ChildStep::landlock_restrict;
    return ChildStep::none;
}

}  // namespace mcpd::sandbox
