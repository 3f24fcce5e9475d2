// Newline framing on a libevent input buffer, with a maximum line length.
//
// MCP's stdio transport and mcpd's control protocol both carry one JSON message per line.
// The reader takes complete lines out of an evbuffer, skips blank lines, strips one trailing
// '\r', and never lets a line grow past its limit: an oversized line is discarded up to its
// newline (in pieces, as it arrives) and reported once.
#pragma once

#include <cstddef>
#include <string>

struct evbuffer;

namespace mcpd {

class LineReader {
public:
    enum class Result {
        line,       // `out` holds the next line
        need_more,  // no complete line buffered
        oversized,  // a line over the limit was (or is being) discarded; call again
    };

    explicit LineReader(std::size_t max_line_bytes) : max_line_(max_line_bytes) {}

    // Take the next complete line out of `input`. `out` is overwritten (its capacity is
    // reused, so a long-lived string avoids fresh allocations for big messages).
    Result next(evbuffer* input, std::string& out);

    // At end of input: the unterminated last line, if any. Returns `line`, `need_more`
    // (nothing left) or `oversized`.
    Result finish(evbuffer* input, std::string& out);

    // Size of the last oversized line seen (bytes discarded so far for it).
    std::size_t discarded_bytes() const { return discarded_; }
    std::size_t max_line_bytes() const { return max_line_; }

private:
    std::size_t max_line_;
    std::size_t scanned_ = 0;  // bytes already searched for '\n' without finding one
    bool discarding_ = false;  // inside an oversized line
    std::size_t discarded_ = 0;
};

}  // namespace mcpd
