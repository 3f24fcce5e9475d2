// A flood test's reading session (fault_flood_test, output_budget_test): it reads its socket
// itself, cheaply, counting the demo server's flood notifications (each index once, in order)
// and checking its echo replies. A reader that falls max_session_queue_bytes behind a flood
// is cut off too, by design, so it must not spend its time parsing every notification.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcp_session.h"

namespace integration {

struct FloodReader {
    std::unique_ptr<McpSession> session;
    std::string buffer;
    bool ended = false;
    long long flood_seen = 0;
    long long flood_out_of_order = 0;
    int echo_sent = 0;
    int echo_ok = 0;
    std::optional<std::string> flood_result;  // the answer to the call with id "flood"
    std::vector<std::string> problems;        // the first lines that were none of the above

    // Queue one echo call (written by the session's flush()).
    void send_echo();
    // Read what the socket has (at most 1 MiB, then another reader's turn) and handle every
    // complete line.
    void read();

private:
    void take(std::string_view line);
};

}  // namespace integration
