// A throwaway account with a passwd entry and a group of its own (useradd --user-group), for
// tests that need what OtherUser's bare uids lack: a name, and a group the system knows it
// is in. Root only; removed (with its group) when the object goes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace integration {

class SystemAccount {
public:
    SystemAccount();
    ~SystemAccount();
    SystemAccount(const SystemAccount&) = delete;
    SystemAccount& operator=(const SystemAccount&) = delete;

    // The account's name, which is also its group's.
    const std::string& name() const { return name_; }
    uid_t uid() const { return uid_; }
    gid_t gid() const { return gid_; }

    // argv run as this account, with its groups: setpriv --reuid --regid --init-groups -- argv...
    std::vector<std::string> command(const std::vector<std::string>& argv) const;

private:
    std::string name_;
    uid_t uid_ = 0;
    gid_t gid_ = 0;
};

}  // namespace integration
