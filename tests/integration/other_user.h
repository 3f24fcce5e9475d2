// Other local users for the access tests: uids that no account uses, taken by root through
// setpriv(1). A test that needs one and cannot have it (not root, no setpriv) FAILs saying why:
// an access test that passes without a second user has proved nothing.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace integration {

class OtherUser {
public:
    // A uid (with the same gid) that no passwd or group entry names and that owns nothing
    // under /tmp named after it; `slot` keeps two users of one test apart.
    explicit OtherUser(int slot = 0);

    uid_t uid() const { return uid_; }
    gid_t gid() const { return static_cast<gid_t>(uid_); }
    std::string id() const { return std::to_string(uid_); }

    // argv run as this user: setpriv --reuid --regid --clear-groups -- argv...
    std::vector<std::string> command(const std::vector<std::string>& argv) const;

private:
    uid_t uid_;
};

// Make `path` (a directory) reachable by every user: mode 0711, or 0755 with `listable`.
void open_directory(const std::string& path, bool listable = false);

// A registry's [daemon] table that lets every user reach the socket (as with the system unit's
// group socket): only mcpd's own checks stand in the way.
inline const std::string kOpenSocket = "[daemon]\nsocket_mode = \"0666\"\n\n";

}  // namespace integration
