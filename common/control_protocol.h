// The control protocol spoken on mcpd's Unix socket. See docs/CONTROL.md.
#pragma once

#include <string>
#include <string_view>

namespace mcpd::control {

// Bump whenever a request or reply changes shape; both sides check it on every request.
inline constexpr int kProtocolVersion = 1;

// Error codes carried in {"ok":false,"error":{"code":...}}.
namespace code {
inline constexpr std::string_view protocol = "protocol";        // version mismatch
inline constexpr std::string_view bad_request = "bad_request";  // malformed request
inline constexpr std::string_view unknown_command = "unknown_command";
inline constexpr std::string_view not_found = "not_found";  // no such server
inline constexpr std::string_view denied = "denied";        // peer credentials refused
inline constexpr std::string_view failed = "failed";        // a server failed to start
inline constexpr std::string_view timeout = "timeout";      // --wait ran out
inline constexpr std::string_view config = "config";        // reload found errors
inline constexpr std::string_view shutting_down = "shutting_down";
inline constexpr std::string_view limit = "limit";  // max_sessions reached
}  // namespace code

// Where the socket lives when nothing says otherwise:
// $XDG_RUNTIME_DIR/mcpd/mcpd.sock, else /tmp/mcpd-<uid>/mcpd.sock.
std::string default_socket_path();

// The socket of the system-wide service (systemd/mcpd.socket).
inline constexpr std::string_view kSystemSocketPath = "/run/mcpd/mcpd.sock";

// Resolve the socket path for a client: explicit flag, then $MCPD_SOCKET, then the default;
// when the per-user default does not exist but `system_socket` does, the system service's.
std::string client_socket_path(std::string_view flag_value,
                               std::string_view system_socket = kSystemSocketPath);

}  // namespace mcpd::control
