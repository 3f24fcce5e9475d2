#include "daemon/control/filesystem_identity.h"

#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace mcpd {

FilesystemIdentity::FilesystemIdentity(uid_t uid, gid_t gid, const std::vector<gid_t>& groups) {
    saved_groups_.resize(static_cast<std::size_t>(std::max(::getgroups(0, nullptr), 0)));
    if (::getgroups(static_cast<int>(saved_groups_.size()), saved_groups_.data()) < 0) return;
    if (::syscall(SYS_setgroups, groups.size(), groups.data()) != 0) return;
    groups_set_ = true;
    ::setfsgid(gid);
    ::setfsuid(uid);
    // Both calls return the previous id whatever happened: read the ids back to know.
    taken_ = static_cast<uid_t>(::setfsuid(static_cast<uid_t>(-1))) == uid &&
             static_cast<gid_t>(::setfsgid(static_cast<gid_t>(-1))) == gid;
}

FilesystemIdentity::~FilesystemIdentity() {
    ::setfsuid(::geteuid());
    ::setfsgid(::getegid());
    if (groups_set_) ::syscall(SYS_setgroups, saved_groups_.size(), saved_groups_.data());
}

}  // namespace mcpd
