// A newline-delimited message channel over descriptors: a Unix socket, or the two pipes of a
// stdio process. Used blocking (one round trip at a time, for latency) or from an epoll loop
// over many channels (for throughput).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/buffer.h"

namespace bench {

class Channel {
public:
    // Takes ownership of both descriptors (they may be the same one, a socket).
    Channel(int in_fd, int out_fd);
    ~Channel();
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    // A connected Unix stream socket; throws when nothing accepts.
    static int connect_unix(const std::string& path);

    int in_fd() const { return in_; }
    int out_fd() const { return out_; }

    // --- blocking use (throws on a closed peer or a timeout) ---
    void send(std::string_view line, int timeout_ms = 30000);
    // The next line without its '\n'; valid until the next read.
    std::string_view read_line(int timeout_ms = 30000);

    // --- event-loop use ---
    // Add `line` + '\n' to the output.
    void queue(std::string_view line);
    // Write what the descriptor takes now; returns whether output is still waiting.
    bool flush();
    bool output_waiting() const { return !output_.empty(); }
    // Read what is there now; `on_line(view)` for each complete line (without '\n').
    // Returns false at end of stream.
    template <typename OnLine>
    bool read_available(OnLine&& on_line);

    // Shut down the write direction (the peer sees EOF).
    void close_write();

private:
    // One read(); false at end of stream or on an error other than EAGAIN.
    bool fill();
    std::optional<std::string_view> take_line();

    int in_;
    int out_;
    Buffer input_;
    std::size_t scanned_ = 0;
    std::size_t pending_consume_ = 0;
    Buffer output_;
    bool eof_ = false;
};

template <typename OnLine>
bool Channel::read_available(OnLine&& on_line) {
    for (;;) {
        while (auto line = take_line()) on_line(*line);
        if (eof_) return false;
        if (!fill()) {
            if (eof_) continue;  // deliver what is left, then report the end
            return true;
        }
    }
}

}  // namespace bench
