// A real local account for a test, made with useradd(8) and removed with userdel(8) when the
// test ends: for the checks that must see a user as the system knows it (by its name in
// allow_users, with its own group).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace integration {

class AddedUser {
public:
    // A system account with a group of its own, no home and no login shell, named after the
    // test's pid and `slot`. FAILs when the test is not root or useradd refuses.
    explicit AddedUser(int slot = 0);
    ~AddedUser();
    AddedUser(const AddedUser&) = delete;
    AddedUser& operator=(const AddedUser&) = delete;

    const std::string& name() const { return name_; }
    uid_t uid() const { return uid_; }

    // argv run as this user, with its groups: setpriv --reuid --regid --init-groups -- argv...
    std::vector<std::string> command(const std::vector<std::string>& argv) const;

private:
    std::string name_;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
};

}  // namespace integration
