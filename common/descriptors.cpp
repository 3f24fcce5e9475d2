#include "common/descriptors.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace mcpd {

namespace {

bool mode_of(int fd, mode_t& mode) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return false;
    mode = st.st_mode;
    return true;
}

}  // namespace

bool is_socket(int fd) {
    mode_t mode = 0;
    return mode_of(fd, mode) && S_ISSOCK(mode);
}

bool is_pipe_or_socket(int fd) {
    mode_t mode = 0;
    return mode_of(fd, mode) && (S_ISSOCK(mode) || S_ISFIFO(mode));
}

bool set_close_on_exec(int fd, bool on) {
    const int flags = ::fcntl(fd, F_GETFD);
    return flags >= 0 && ::fcntl(fd, F_SETFD, on ? flags | FD_CLOEXEC : flags & ~FD_CLOEXEC) == 0;
}

}  // namespace mcpd
