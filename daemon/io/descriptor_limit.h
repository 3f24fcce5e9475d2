// mcpd's own file descriptor limit (RLIMIT_NOFILE).
//
// systemd and most shells start programs with a soft limit of 1024 (select() cannot handle
// more) under a much higher hard limit; mcpd uses epoll, and every session and server costs
// it descriptors, so it takes the hard limit. Programs it starts should get the soft limit
// back: some still use select() or close every descriptor up to the limit.
#pragma once

#include <cstddef>

namespace mcpd {

// Raise the soft limit to the hard one (logged at debug). Returns the soft limit now in force.
std::size_t raise_descriptor_limit();

// Put back the soft limit mcpd started with. Async-signal-safe: for a child between fork
// and exec. Does nothing when raise_descriptor_limit() was not called or changed nothing.
void restore_descriptor_limit();

}  // namespace mcpd
