#include "ctl/fd_passing.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/unique_fd.h"

namespace mcpctl {

bool send_fds(int socket, std::span<const int> fds, char byte, std::string& error) {
    iovec data{&byte, 1};
    const std::size_t payload = fds.size() * sizeof(int);
    // Heap memory from operator new is aligned for cmsghdr.
    std::vector<char> control(CMSG_SPACE(payload));

    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(payload);
    std::memcpy(CMSG_DATA(header), fds.data(), payload);

    for (;;) {
        const ssize_t sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
        if (sent == 1) return true;
        if (sent < 0 && errno == EINTR) continue;
        if (sent < 0 && (errno == EPIPE || errno == ECONNRESET))
            error = "mcpd closed the connection before taking the descriptors";
        else if (sent < 0)
            error = std::string("cannot pass the descriptors to mcpd: ") + std::strerror(errno);
        else
            error = "cannot pass the descriptors to mcpd: nothing was sent";
        return false;
    }
}

void detach_fd(int fd) {
    const mcpd::UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!null || ::dup2(null.get(), fd) < 0) ::close(fd);
}

}  // namespace mcpctl
