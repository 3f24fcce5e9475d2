#include "common/control_protocol.h"

#include <unistd.h>

#include <cstdlib>

namespace mcpd::control {

std::string default_socket_path() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime != nullptr && runtime[0] == '/') return std::string(runtime) + "/mcpd/mcpd.sock";
    return "/tmp/mcpd-" + std::to_string(::getuid()) + "/mcpd.sock";
}

std::string client_socket_path(std::string_view flag_value) {
    if (!flag_value.empty()) return std::string(flag_value);
    const char* env = std::getenv("MCPD_SOCKET");
    if (env != nullptr && env[0] != '\0') return env;
    return default_socket_path();
}

}  // namespace mcpd::control
