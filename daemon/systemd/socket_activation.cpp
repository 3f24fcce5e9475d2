#include "daemon/systemd/socket_activation.h"

#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace mcpd {

Result<UniqueFd> activated_control_socket() {
    char** names = nullptr;
    // 1: unset LISTEN_* so nothing we start inherits them (children get a clean env anyway).
    const int count = sd_listen_fds_with_names(1, &names);
    if (count < 0)
        return permanent_failure(std::string("cannot read the sockets systemd passed: ") +
                                 std::strerror(-count));
    if (count == 0) return UniqueFd();
    int chosen = -1;
    for (int i = 0; i < count; ++i) {
        const int fd = SD_LISTEN_FDS_START + i;
        const bool named_control = names != nullptr && names[i] != nullptr && std::strcmp(names[i], "control") == 0;
        if (chosen < 0 && (named_control || count == 1)) {
            chosen = fd;
        } else {
            ::close(fd);  // not ours to use
        }
    }
    if (names != nullptr) {
        for (int i = 0; i < count; ++i) std::free(names[i]);
        std::free(names);
    }
    if (chosen < 0) {
        return permanent_failure("systemd passed " + std::to_string(count) +
                                 " sockets but none named 'control' (FileDescriptorName=control "
                                 "in mcpd.socket)");
    }
    if (sd_is_socket_unix(chosen, SOCK_STREAM, 1, nullptr, 0) <= 0) {
        ::close(chosen);
        return permanent_failure("the socket systemd passed is not a listening Unix stream socket");
    }
    return UniqueFd(chosen);
}

}  // namespace mcpd
