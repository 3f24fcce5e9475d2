// Newline framing on a libevent input buffer, with a maximum line length.
//
// MCP's stdio transport and mcpd's control protocol both carry one JSON message per line.
// The reader takes complete lines out of an evbuffer, skips blank lines, strips one trailing
// '\r', and never lets a line grow past its limit: an oversized line is discarded up to its
// newline (in pieces, as it arrives) and reported once. With `keep_edges` it is reported when
// it ends instead, and its first and last bytes are kept: enough to find the id of a JSON-RPC
// message too long to keep.
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

    // How much of each end of an oversized line `keep_edges` keeps.
    static constexpr std::size_t kEdgeBytes = 512;

    // Without `keep_edges` an oversized line is reported as soon as it is known to be too
    // long; with it, once its end has arrived (newline or EOF), with discarded_head() and
    // discarded_tail() holding its first and last kEdgeBytes.
    explicit LineReader(std::size_t max_line_bytes, bool keep_edges = false)
        : max_line_(max_line_bytes), keep_edges_(keep_edges) {}

    // Take the next complete line out of `input`. `out` is overwritten (its capacity is
    // reused, so a long-lived string avoids fresh allocations for big messages).
    Result next(evbuffer* input, std::string& out);

    // At end of input: the unterminated last line, if any. Returns `line`, `need_more`
    // (nothing left) or `oversized`.
    Result finish(evbuffer* input, std::string& out);

    // Size of the last oversized line seen (bytes discarded so far for it).
    std::size_t discarded_bytes() const { return discarded_; }
    std::size_t max_line_bytes() const { return max_line_; }
    // The first and last bytes of the last oversized line (with keep_edges).
    const std::string& discarded_head() const { return head_; }
    const std::string& discarded_tail() const { return tail_; }

private:
    // Start a new discarded line's edges from the first `length` bytes of `input`.
    void keep_head(evbuffer* input, std::size_t length);
    // Add the end of the first `length` bytes of `input` to the discarded line's tail.
    void keep_tail(evbuffer* input, std::size_t length);

    std::size_t max_line_;
    bool keep_edges_;
    std::string head_;
    std::string tail_;
    std::size_t scanned_ = 0;  // bytes already searched for '\n' without finding one
    bool discarding_ = false;  // inside an oversized line
    std::size_t discarded_ = 0;
};

}  // namespace mcpd
