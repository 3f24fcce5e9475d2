#include "common/fd_passing.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/check.h"

namespace mcpd {

Result<Done> send_fds(int socket, std::span<const int> fds, char byte) {
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
    MCPD_CHECK(header != nullptr, "a control buffer sized by CMSG_SPACE holds a header");
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(payload);
    std::memcpy(CMSG_DATA(header), fds.data(), payload);

    for (;;) {
        const ssize_t sent = ::sendmsg(socket, &message, MSG_NOSIGNAL);
        if (sent == 1) return Done{};
        if (sent < 0 && errno == EINTR) continue;
        if (sent < 0 && (errno == EPIPE || errno == ECONNRESET))
            return permanent_failure("mcpd closed the connection before taking the descriptors");
        if (sent < 0)
            return permanent_failure(std::string("cannot pass the descriptors to mcpd: ") +
                                     std::strerror(errno));
        return permanent_failure("cannot pass the descriptors to mcpd: nothing was sent");
    }
}

Result<std::vector<UniqueFd>> receive_fds(int socket, std::size_t count) {
    char byte = 0;
    iovec data{&byte, 1};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * count));  // aligned, as in send_fds
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    const int error = errno;
    // Owned before anything is judged, so that every way out closes them.
    std::vector<UniqueFd> fds;
    if (n > 0) {
        for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            const std::size_t received = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < received; ++i) {
                int fd = -1;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                fds.emplace_back(fd);
            }
        }
    }
    if (n < 0 && (error == EAGAIN || error == EWOULDBLOCK || error == EINTR))
        return transient_failure("no descriptors have arrived yet");
    if (n < 0)
        return permanent_failure(std::string("cannot receive descriptors: ") +
                                 std::strerror(error));
    if (n == 0)
        return permanent_failure("the peer closed the connection instead of passing descriptors");
    const bool truncated = (message.msg_flags & MSG_CTRUNC) != 0;
    if (truncated || fds.size() != count) {
        std::string sentence = "expected ";  // appended: gcc 12 warns on "literal" + string
        sentence += std::to_string(count);
        sentence += " descriptors, got ";
        sentence += truncated ? std::string("more") : std::to_string(fds.size());
        return permanent_failure(std::move(sentence));
    }
    return fds;
}

void detach_fd(int fd) {
    const UniqueFd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!null || ::dup2(null.get(), fd) < 0) ::close(fd);
}

}  // namespace mcpd
