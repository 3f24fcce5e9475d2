#include "system_account.h"

#include <pwd.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "process.h"

namespace integration {

SystemAccount::SystemAccount() {
    if (::geteuid() != 0)
        FAIL(
            "this test needs a throwaway account: run it as root (it makes one with useradd and "
            "removes it), as CI does");
    // Spread by pid so that tests running side by side do not pick the same name.
    name_ = "mcpdtest" + std::to_string(::getpid());
    const RunResult made = run_process({"/usr/sbin/useradd", "--system", "--no-create-home",
                                        "--user-group", "--shell", "/usr/sbin/nologin", name_},
                                       30s);
    if (made.exit_code != 0) FAIL("useradd " << name_ << " failed: " << made.describe());
    const passwd* entry = ::getpwnam(name_.c_str());
    if (entry == nullptr) FAIL("useradd made " << name_ << " but getpwnam does not find it");
    uid_ = entry->pw_uid;
    gid_ = entry->pw_gid;
}

SystemAccount::~SystemAccount() {
    // userdel takes the account's own group with it; groupdel for a system that keeps it.
    run_process({"/usr/sbin/userdel", name_}, 30s);
    run_process({"/usr/sbin/groupdel", name_}, 30s);
}

std::vector<std::string> SystemAccount::command(const std::vector<std::string>& argv) const {
    std::vector<std::string> out{"/usr/bin/setpriv", "--reuid=" + name_, "--regid=" + name_,
                                 "--init-groups", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

}  // namespace integration
