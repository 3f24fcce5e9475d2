// Taking another user's filesystem identity for a moment, to open a file or a directory
// exactly as that user would: the kernel then checks every component, the groups and the
// ACLs as for the user's own open(2). Only root can take it.
//
// setfsuid and setfsgid change only what file access is checked against, and the raw setgroups
// system call only this thread's groups (glibc's wrapper would change every thread's); mcpd's
// other credentials are untouched, and all of it is given back on destruction.
#pragma once

#include <sys/types.h>

#include <vector>

namespace mcpd {

class FilesystemIdentity {
public:
    FilesystemIdentity(uid_t uid, gid_t gid, const std::vector<gid_t>& groups);
    ~FilesystemIdentity();
    FilesystemIdentity(const FilesystemIdentity&) = delete;
    FilesystemIdentity& operator=(const FilesystemIdentity&) = delete;

    // Whether the identity was taken (false without CAP_SETUID and CAP_SETGID).
    bool taken() const { return taken_; }

private:
    std::vector<gid_t> saved_groups_;
    bool groups_set_ = false;
    bool taken_ = false;
};

}  // namespace mcpd
