// Copying bytes between an agent's pipes and mcpd's socket, both ways, without parsing them:
// what `mcpctl connect` does when it cannot hand its stdin and stdout to mcpd.
#pragma once

#include <string_view>

#include "common/result.h"

namespace mcpctl {

struct RelayEnds {
    int input;   // read, copied to the socket (the agent's requests: mcpctl's stdin)
    int output;  // written with what the socket sends (mcpd's answers: mcpctl's stdout)
    int socket;  // the attached control connection
};

// Copy input -> socket and socket -> output until the socket reaches end of file (mcpd closed
// the session and everything it sent was written: success), starting with `pending_output`
// (bytes already read from the socket). Fails when reading the input, writing the output (the
// agent stopped reading) or using the socket fails. At the input's end of file the
// socket's write side is shut down and copying the other way goes on. The descriptors may be
// blocking and shared with other processes: their flags are never changed, the socket is used
// with MSG_DONTWAIT and the output written at most PIPE_BUF bytes per ready poll(). Memory is
// two 16 KiB buffers. SIGPIPE must be ignored (or the output must not be a pipe).
mcpd::Result<mcpd::Done> relay_bytes(const RelayEnds& ends, std::string_view pending_output);

}  // namespace mcpctl
