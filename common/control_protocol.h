// The control protocol spoken on mcpd's Unix socket. See docs/CONTROL.md.
#pragma once

#include <string>
#include <string_view>

#include "common/socket_location.h"

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

}  // namespace mcpd::control
