// Copying bytes between an agent's pipes and mcpd's socket, both ways, without parsing them:
// what `mcpctl connect` does when it cannot hand its stdin and stdout to mcpd.
#pragma once

#include <string>
#include <string_view>

namespace mcpctl {

struct RelayEnds {
    int input;   // read, copied to the socket (the agent's requests: mcpctl's stdin)
    int output;  // written with what the socket sends (mcpd's answers: mcpctl's stdout)
    int socket;  // the attached control connection
};

enum class RelayEnd {
    socket_closed,  // mcpd closed the session and everything it sent was written: success
    output_failed,  // the output cannot be written (the agent stopped reading)
    failed,         // reading the input or using the socket failed
};

struct RelayResult {
    RelayEnd end;
    std::string error;  // a sentence unless socket_closed
};

// Copy input -> socket and socket -> output until the socket reaches end of file, starting
// with `pending_output` (bytes already read from the socket). At the input's end of file the
// socket's write side is shut down and copying the other way goes on. The descriptors may be
// blocking and shared with other processes: their flags are never changed, the socket is used
// with MSG_DONTWAIT and the output written at most PIPE_BUF bytes per ready poll(). Memory is
// two 16 KiB buffers. SIGPIPE must be ignored (or the output must not be a pipe).
RelayResult relay_bytes(const RelayEnds& ends, std::string_view pending_output);

}  // namespace mcpctl
