#include "other_user.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

namespace integration {

namespace {

constexpr const char* kSetpriv = "/usr/bin/setpriv";

bool unused(uid_t uid) {
    if (::getpwuid(uid) != nullptr || ::getgrgid(static_cast<gid_t>(uid)) != nullptr) return false;
    struct stat st {};
    return ::lstat(("/tmp/mcpd-" + std::to_string(uid)).c_str(), &st) != 0;
}

}  // namespace

OtherUser::OtherUser(int slot) : uid_(0) {
    if (::geteuid() != 0)
        FAIL("this test needs a second local user: run it as root (it takes uids no account uses "
             "with setpriv), as CI does");
    if (::access(kSetpriv, X_OK) != 0)
        FAIL("this test needs a second local user and " << kSetpriv
                                                         << " (util-linux) is missing");
    // Spread by pid so that tests running side by side do not pick the same uid.
    const uid_t base = 61000 + static_cast<uid_t>((::getpid() * 7 + slot * 131) % 3000);
    for (uid_t candidate = base; candidate < base + 1000; ++candidate) {
        if (unused(candidate)) {
            uid_ = candidate;
            return;
        }
    }
    FAIL("no unused uid found from " << base << " on for a second local user");
}

std::vector<std::string> OtherUser::command(const std::vector<std::string>& argv) const {
    std::vector<std::string> out{kSetpriv,     "--reuid=" + id(), "--regid=" + id(),
                                 "--clear-groups", "--"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
}

void open_directory(const std::string& path, bool listable) {
    if (::chmod(path.c_str(), listable ? 0755 : 0711) != 0)
        FAIL("cannot open " << path << " to other users");
}

}  // namespace integration
