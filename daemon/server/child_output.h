// What a server process writes on stdout, sorted line by line (a batch, a JSON array, which
// 2025-03-26 lets a server send, message by message):
// - a line that is not JSON-RPC, or one over max_message_bytes: dropped and logged (sparingly);
//   when its edges show an answer to a session's request, that request gets an error instead
//   of waiting forever;
// - a ping from the child: answered at once, whoever is attached;
// - an answer to mcpd's own requests: to the handshake;
// - anything else, once the handshake is done: to the router, for the sessions.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "common/json_envelope.h"
#include "daemon/mux/lost_message_id.h"

namespace mcpd {

class Handshake;
class Router;

class ChildOutput {
public:
    // `to_child` writes a line to the current process's stdin (the answer to its pings).
    ChildOutput(std::string server, std::size_t max_message_bytes,
                std::function<void(std::string_view)> to_child);

    // A line from the current process, whose handshake is `handshake` (null: none).
    void on_message(wire::PaddedText message, Handshake* handshake, Router& router);
    // A line over max_message_bytes, with its first and last bytes; `handshake` is null when
    // it came from a process that is no longer the current one.
    void on_oversized(std::size_t bytes, std::string_view head, std::string_view tail,
                      Handshake* handshake, Router& router);

private:
    // One message (a line, or `in_batch` an element of a batch) sorted as above.
    void dispatch(wire::PaddedText message, Handshake* handshake, Router& router, bool in_batch);
    // A line that is a JSON array: each element dispatched in order; an empty one, or one of
    // more than kMaxBatchElements, is dropped and logged.
    void on_batch(wire::PaddedText message, Handshake* handshake, Router& router);
    // A line the child wrote could not be used: if its edges show an answer to a session's
    // request, fail that request with `message`.
    void fail_lost_reply(const LostMessageId& edges, const std::string& message,
                         std::string_view reason, Handshake* handshake, Router& router);

    std::string server_;
    std::size_t max_message_bytes_;
    std::function<void(std::string_view)> to_child_;
    wire::EnvelopeScanner scanner_;
    wire::Envelope envelope_;
    unsigned noise_lines_ = 0;  // non-JSON lines, logged sparingly
};

}  // namespace mcpd
