// What the HTTP front door hands to the binary that replaces mcpd in place (docs/UPGRADE.md):
// its connections, each on its descriptor with what was read of a request and not yet taken
// and what was written and not yet sent, and each session's exchanges, streams and replay
// buffer. Plain records: daemon/upgrade_state_http.cpp writes and reads them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mcpd {

// One HTTP connection (HttpConnection::carried, HttpConnection::resume).
struct CarriedHttpConnection {
    std::uint64_t id = 0;  // the front door's number for it, which sessions' exchanges name
    int fd = -1;           // kept open across the exec
    std::string listener;  // the address it was accepted on, as configured
    std::string received;  // read, not yet taken as a request
    std::string unwritten;  // queued for the client, not yet sent
    bool answering = false;
    bool streaming = false;
    bool keep_alive = true;
    bool close_after_write = false;

    bool operator==(const CarriedHttpConnection&) const = default;
};

// One POST waiting for its answers (HttpTransport's exchange).
struct CarriedHttpExchange {
    std::uint64_t number = 0;
    std::uint64_t connection = 0;  // 0: its connection went; answers go to the GET stream
    bool sse = false;
    bool batch = false;
    bool initialize = false;
    std::vector<std::string> waiting;  // raw ids of its requests not yet answered
    std::vector<std::string> answers;  // gathered for a JSON body
    std::string session_header;

    bool operator==(const CarriedHttpExchange&) const = default;
};

// One event of a session's replay buffer (SseReplayBuffer), as formatted.
struct CarriedSseEvent {
    std::uint64_t id = 0;
    std::string stream;
    std::string text;

    bool operator==(const CarriedSseEvent&) const = default;
};

struct CarriedSseBuffer {
    std::uint64_t last_id = 0;
    std::uint64_t dropped_through = 0;
    std::vector<CarriedSseEvent> events;

    bool operator==(const CarriedSseBuffer&) const = default;
};

// One HTTP session's transport (HttpTransport::carried). Who it acts as is not in it: `token`
// is signed with the front door's key, and the new process takes the user and target from it
// only once the signature is verified.
struct CarriedHttpSession {
    std::string token;       // its Mcp-Session-Id, or (a 2026-07-28 request) claims signed for it
    std::string session_id;  // the Mcp-Session-Id given to the client (empty: a 2026 request)
    std::string protocol;
    bool one_shot = false;
    std::int64_t idle_ms = 0;  // since the client last sent a request or had a stream open
    std::uint64_t next_exchange = 1;
    std::vector<CarriedHttpExchange> exchanges;
    std::map<std::string, std::uint64_t> by_request;   // raw request id → exchange
    std::map<std::string, std::uint64_t> by_progress;  // raw progress token → exchange
    std::optional<std::uint64_t> listener;               // the GET stream's connection
    CarriedSseBuffer replay;
    std::uint64_t delivered = 0;
    std::vector<std::string> held;     // lines not yet handed to the router
    std::vector<std::string> swallow;  // raw ids whose answers are mcpd's own

    bool operator==(const CarriedHttpSession&) const = default;
};

// The front door's own part: its connections and counters.
struct CarriedHttpFront {
    std::vector<CarriedHttpConnection> connections;
    std::uint64_t next_client = 1;
    std::uint64_t serial = 0;
    std::vector<std::string> deleted;  // Mcp-Session-Ids ended with DELETE

    bool operator==(const CarriedHttpFront&) const = default;
};

}  // namespace mcpd
