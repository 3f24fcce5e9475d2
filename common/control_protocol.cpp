#include "common/control_protocol.h"

#include <unistd.h>

#include <cstdlib>

namespace mcpd::control {

std::string default_socket_path() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime != nullptr && runtime[0] == '/') return std::string(runtime) + "/mcpd/mcpd.sock";
    return "/tmp/mcpd-" + std::to_string(::getuid()) + "/mcpd.sock";
}

std::string client_socket_path(std::string_view flag_value, std::string_view system_socket) {
    if (!flag_value.empty()) return std::string(flag_value);
    const char* env = std::getenv("MCPD_SOCKET");
    if (env != nullptr && env[0] != '\0') return env;
    std::string user_socket = default_socket_path();
    // Members of group mcpd reach the system service without naming its socket.
    if (::access(user_socket.c_str(), F_OK) != 0 &&
        ::access(std::string(system_socket).c_str(), F_OK) == 0)
        return std::string(system_socket);
    return user_socket;
}

}  // namespace mcpd::control
