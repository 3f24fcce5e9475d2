// What a descriptor is, and whether it survives an exec: for descriptors mcpd did not open
// itself this time (passed by a peer, or kept across an upgrade in place).
#pragma once

namespace mcpd {

// Whether `fd` is a socket; a pipe or a socket (what a session's ends may be).
bool is_socket(int fd);
bool is_pipe_or_socket(int fd);

// Set or clear FD_CLOEXEC on `fd`; false when it cannot (not a descriptor).
bool set_close_on_exec(int fd, bool on = true);

}  // namespace mcpd
