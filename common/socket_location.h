// Where the control socket is when nothing names it, and why: both mcpd and mcpctl resolve it
// the same way, so a client started with a minimal environment (no XDG_RUNTIME_DIR, as the
// official SDKs start stdio servers) still finds the per-user daemon.
#pragma once

#include <string>
#include <string_view>

namespace mcpd::control {

// A socket path and the sentence that says why it was chosen ("$XDG_RUNTIME_DIR is set").
struct SocketChoice {
    std::string path;
    std::string reason;
};

// The socket of the system-wide service (systemd/mcpd.socket).
inline constexpr std::string_view kSystemSocketPath = "/run/mcpd/mcpd.sock";

// The per-user default: $XDG_RUNTIME_DIR/mcpd/mcpd.sock; without it RUN_USER/UID/mcpd/mcpd.sock
// when RUN_USER/UID is a real directory of this user's (what systemd-logind makes); else
// /tmp/mcpd-UID/mcpd.sock. `run_user` is "/run/user" except in tests.
SocketChoice default_socket(std::string_view run_user = "/run/user");
std::string default_socket_path();

// A client's socket: the flag, then $MCPD_SOCKET, then the per-user default; when that does
// not exist but `system_socket` does, the system service's.
SocketChoice client_socket(std::string_view flag_value,
                           std::string_view system_socket = kSystemSocketPath,
                           std::string_view run_user = "/run/user");
std::string client_socket_path(std::string_view flag_value,
                               std::string_view system_socket = kSystemSocketPath);

}  // namespace mcpd::control
