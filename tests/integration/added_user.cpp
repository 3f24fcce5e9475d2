#include "added_user.h"

#include <pwd.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "process.h"

namespace integration {

AddedUser::AddedUser(int slot)
    : name_("mcpdt" + std::to_string(::getpid()) + "s" + std::to_string(slot)) {
    if (::geteuid() != 0)
        FAIL("this test adds a local user with useradd: run it as root, as CI does");
    // Left over by a test that was killed before it could remove it.
    if (::getpwnam(name_.c_str()) != nullptr) run_process({"/usr/sbin/userdel", name_});
    const RunResult added =
        run_process({"/usr/sbin/useradd", "--system", "--user-group", "--no-create-home", "--shell",
                     "/usr/sbin/nologin", name_});
    if (added.exit_code != 0) FAIL("useradd " << name_ << " failed: " << added.describe());
    const passwd* entry = ::getpwnam(name_.c_str());
    if (entry == nullptr) FAIL("useradd made " << name_ << " but getpwnam does not find it");
    uid_ = entry->pw_uid;
    gid_ = entry->pw_gid;
}

AddedUser::~AddedUser() {
    // Its processes are the test's, ended before this runs; userdel removes its group too.
    run_process({"/usr/sbin/userdel", name_});
}

std::vector<std::string> AddedUser::command(const std::vector<std::string>& argv) const {
    std::vector<std::string> out{"/usr/bin/setpriv", "--reuid=" + std::to_string(uid_),
                                 "--regid=" + std::to_string(gid_), "--init-groups", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

}  // namespace integration
