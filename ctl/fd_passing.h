// Handing descriptors to mcpd over the control socket (SCM_RIGHTS), so that mcpd talks to an
// agent's pipes directly instead of through mcpctl.
#pragma once

#include <span>
#include <string>

namespace mcpctl {

// Send the single byte `byte` with an SCM_RIGHTS message carrying `fds`, in that order, on the
// connected Unix socket `socket`. The receiver gets its own references; ours stay open. False
// and a sentence in `error` when the send fails (never raises SIGPIPE).
bool send_fds(int socket, std::span<const int> fds, char byte, std::string& error);

// Point `fd` at /dev/null (or close it when /dev/null cannot be opened): drop this process's
// reference to what it was without freeing the number for the next open or socket.
void detach_fd(int fd);

}  // namespace mcpctl
