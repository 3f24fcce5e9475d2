// Newline framing with a maximum line length, over a buffer the reader owns.
//
// MCP's stdio transport and mcpd's control protocol both carry one JSON message per line.
// The reader reads a descriptor straight into its buffer (or takes bytes read elsewhere),
// searches only the bytes it has not searched yet, and hands out complete lines where they lie,
// each followed by at least kPadding readable bytes, so a JSON scanner can read a little past
// the end without a copy. It skips blank lines, strips one trailing '\r', and never lets a
// line grow past its limit: an oversized line is discarded up to its newline (in pieces, as it
// arrives) and reported once. With `keep_edges` it is reported when it ends instead, and its
// first and last bytes are kept: enough to find the id of a JSON-RPC message too long to keep.
// Memory grown for a big message is given back as soon as the reader is empty again.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "common/byte_buffer.h"

struct evbuffer;

namespace mcpd {

class LineReader {
public:
    enum class Result {
        line,       // the next line was handed out
        need_more,  // no complete line buffered
        oversized,  // a line over the limit was (or is being) discarded; call again
    };

    // How much of each end of an oversized line `keep_edges` keeps.
    static constexpr std::size_t kEdgeBytes = 512;
    // Readable bytes after the end of every line handed out (simdjson's SIMDJSON_PADDING).
    static constexpr std::size_t kPadding = 64;
    // The most one read_from() asks for while no long line is being gathered.
    static constexpr std::size_t kReadBytes = 64 * 1024;

    // Without `keep_edges` an oversized line is reported as soon as it is known to be too
    // long; with it, once its end has arrived (newline or EOF), with discarded_head() and
    // discarded_tail() holding its first and last kEdgeBytes.
    explicit LineReader(std::size_t max_line_bytes, bool keep_edges = false)
        : max_line_(max_line_bytes), keep_edges_(keep_edges) {}

    // One read() from the non-blocking `fd` into the buffer: what read() returned (0 at EOF,
    // -1 with errno set, EAGAIN included).
    ssize_t read_from(int fd);
    // Bytes read elsewhere.
    void append(std::string_view bytes);
    // Everything buffered in `input` (which is left empty).
    void append(evbuffer* input);

    // The next complete line. `line` points into the buffer, with kPadding readable bytes
    // after it, and stays valid until the reader is next called.
    Result next(std::string_view& line);
    // At end of input: next(), then the unterminated last line, if any.
    Result finish(std::string_view& line);

    // The same over a libevent buffer (all of it is taken in), with the line copied to `out`.
    Result next(evbuffer* input, std::string& out);
    Result finish(evbuffer* input, std::string& out);

    // Hand the buffer over: the last line handed out lies in it, and stays valid while the
    // returned buffer lives. What was read after that line moves to a new buffer of the
    // reader's own.
    ByteBuffer give_buffer();

    // Bytes taken in and not yet handed out or discarded.
    std::size_t buffered() const { return end_ - begin_; }
    // Those bytes, for handing the stream over to another reader.
    std::string_view unread() const { return {buffer_.data() + begin_, end_ - begin_}; }
    // Bytes of memory held (the buffer's capacity).
    std::size_t capacity() const { return buffer_.capacity(); }
    // Inside an oversized line, discarding it.
    bool discarding() const { return discarding_; }
    // Size of the last oversized line seen (bytes discarded so far for it).
    std::size_t discarded_bytes() const { return discarded_; }
    std::size_t max_line_bytes() const { return max_line_; }
    // The first and last bytes of the last oversized line (with keep_edges).
    const std::string& discarded_head() const { return head_; }
    const std::string& discarded_tail() const { return tail_; }

private:
    // Room for at least `bytes` more after end_ (and the padding), moving the unread bytes
    // to the front first when that is enough.
    void make_room(std::size_t bytes);
    // Drop everything buffered as part of an oversized line.
    void discard_buffered();
    // Add the last bytes of [from, to) to the discarded line's tail.
    void keep_tail(const char* from, const char* to);
    // Back to an empty buffer, giving back memory grown for a big line.
    void reset_if_empty();

    std::size_t max_line_;
    bool keep_edges_;
    ByteBuffer buffer_;
    std::size_t begin_ = 0;    // first byte not yet handed out
    std::size_t end_ = 0;      // end of the bytes taken in
    std::size_t scanned_ = 0;  // bytes from begin_ already searched for '\n' without finding one
    bool discarding_ = false;  // inside an oversized line
    std::size_t discarded_ = 0;
    std::string head_;
    std::string tail_;
};

}  // namespace mcpd
