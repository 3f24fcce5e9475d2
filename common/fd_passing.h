// Passing descriptors over a Unix socket (SCM_RIGHTS), both ends: how `mcpctl connect` hands
// an agent's pipes to mcpd after an attach with pass_fds (docs/CONTROL.md), so mcpd talks to
// the agent directly instead of through mcpctl.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace mcpd {

// Send the single byte `byte` with an SCM_RIGHTS message carrying `fds`, in that order, on the
// connected Unix socket `socket`. The receiver gets its own references; ours stay open. Never
// raises SIGPIPE.
Result<Done> send_fds(int socket, std::span<const int> fds, char byte);

// Receive one byte carrying exactly `count` descriptors, close-on-exec, in the order they were
// sent. A transient failure when there is nothing to read yet (a non-blocking socket woken
// spuriously, or a signal): wait and call again. A permanent one when the peer closed, sent
// another number of descriptors, or sent more than fit (those are closed, never leaked).
Result<std::vector<UniqueFd>> receive_fds(int socket, std::size_t count);

// Point `fd` at /dev/null (or close it when /dev/null cannot be opened): drop this process's
// reference to what it was without freeing the number for the next open or socket.
void detach_fd(int fd);

}  // namespace mcpd
