// The one gate every message from a client passes before a router acts on it, for a single
// server's Router and a GroupRouter alike: what is not a JSON-RPC 2.0 request, notification
// or response is answered here with the spec's error (or, for a response, dropped), so both
// routers refuse the same lines with the same words. A request with by-position (array)
// params gets -32602: JSON-RPC allows them, but every MCP request's params is an object.
#pragma once

#include <string>
#include <string_view>

#include "common/json_envelope.h"

namespace mcpd {

struct GateVerdict {
    enum class Kind {
        pass,           // a well-formed message: the router handles it
        drop_response,  // a bad response: never answered (two peers answering each other's bad
                        // responses would loop), only noted
        reply,          // a bad request or notification: answer `code`/`message` by `raw_id`
    };
    Kind kind = Kind::pass;
    std::string_view raw_id;  // the id to answer by, as it lies in the line; empty for null
    int code = 0;
    std::string message;
};

// `status` and `e` are the scanner's findings for `line`, `scan_error` its error text.
// A bad message is answered by its id only when it has exactly one usable id.
GateVerdict check_client_message(wire::ScanStatus status, const wire::Envelope& e,
                                 std::string_view line, std::string_view scan_error);

}  // namespace mcpd
