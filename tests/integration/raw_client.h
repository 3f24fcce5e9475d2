// A bare Unix-socket client for sending mcpd control lines that mcpctl would never send.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "process.h"

namespace integration {

class RawClient {
public:
    // Connect to `socket_path`; throws when nothing accepts.
    explicit RawClient(const std::string& socket_path);
    ~RawClient();
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    // Send `data` as it is; returns how many bytes went out before the peer stopped reading
    // (it may close the connection halfway through an oversized request).
    std::size_t send(std::string_view data, Duration timeout = 10s);
    // The next line the daemon sends (without its '\n'); nullopt on EOF or timeout.
    std::optional<std::string> read_line(Duration timeout = 10s);
    // Close the sending side (shutdown SHUT_WR): the daemon reads an end of file, we still read.
    void close_input();
    // Whether the daemon closes the connection (EOF) within `timeout`, discarding what it sends.
    bool wait_closed(Duration timeout = 10s);

private:
    int fd_ = -1;
    std::string buffer_;
    bool eof_ = false;
};

}  // namespace integration
