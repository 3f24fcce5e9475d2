// HTTP/1.1 for the MCP endpoint: a strict reader of request heads and the writers of
// responses, plain and chunked. Strict because mcpd may sit behind a proxy: a head two peers
// could read differently (a folded line, a header given twice, a length together with a
// transfer coding) is what request smuggling is made of, so it is refused as a whole.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace mcpd {

// Headers that count only once: a second one is refused rather than one of them chosen.
inline constexpr std::array<std::string_view, 11> kSingletonHeaders = {
    "host",         "authorization",    "content-length",
    "content-type", "mcp-session-id",   "mcp-protocol-version",
    "mcp-method",   "mcp-name",         "last-event-id",
    "origin",       "transfer-encoding"};

// The headers mcpd reads on every request, each found in a slot of its own instead of by a
// search of the head: `known_header` names them, and folds to a constant for a literal name.
inline constexpr std::array<std::string_view, 13> kKnownHeaders = {
    "host",          "origin",         "authorization",  "accept",
    "content-type",  "content-length", "transfer-encoding", "connection",
    "last-event-id", "mcp-session-id", "mcp-protocol-version", "mcp-method",
    "mcp-name"};
// The slot of `name` (lowercase) in kKnownHeaders, or kKnownHeaders.size(): by length first,
// which leaves at most two names to compare.
constexpr std::size_t known_header(std::string_view name) {
    const auto is = [name](std::size_t slot) { return kKnownHeaders[slot] == name; };
    std::size_t slot = kKnownHeaders.size();
    switch (name.size()) {
        case 4: slot = 0; break;                   // host
        case 6: slot = name[0] == 'o' ? 1 : 3; break;  // origin, accept
        case 8: slot = 12; break;                  // mcp-name
        case 10: slot = name[0] == 'c' ? 7 : 11; break;  // connection, mcp-method
        case 12: slot = 4; break;                  // content-type
        case 13: slot = name[0] == 'a' ? 2 : 8; break;  // authorization, last-event-id
        case 14: slot = name[0] == 'c' ? 5 : 9; break;  // content-length, mcp-session-id
        case 17: slot = 6; break;                  // transfer-encoding
        case 20: slot = 10; break;                 // mcp-protocol-version
        default: return kKnownHeaders.size();
    }
    return is(slot) ? slot : kKnownHeaders.size();
}
constexpr bool every_known_header_found() {
    for (std::size_t i = 0; i < kKnownHeaders.size(); ++i)
        if (known_header(kKnownHeaders[i]) != i) return false;
    return known_header("mcp-namE") == kKnownHeaders.size() &&
           known_header("") == kKnownHeaders.size();
}
static_assert(every_known_header_found());

struct HttpRequestHead {
    std::string method;  // as sent
    std::string path;    // target up to '?'; starts with '/'
    std::string query;   // after '?', may be empty
    int minor = 1;       // HTTP/1.minor (0 or 1)
    // The value of header `name` (lowercase); nothing when absent. In line wherever it is
    // called, so that a literal name's slot is found while compiling, not by comparing.
    [[gnu::always_inline]] std::optional<std::string_view> header(std::string_view name) const {
        const std::size_t known = known_header(name);
        const std::size_t i = known < known_.size() ? known_[known] : index_of(name);
        if (i >= fields_.size()) return std::nullopt;
        return fields_[i].value(text_);
    }
    // Every header in the order first sent: names lowercased, values trimmed of spaces and
    // tabs; one entry per name: a header that may be a list and was sent more than once is
    // joined with ", " (RFC 9110 §5.3).
    std::vector<std::pair<std::string_view, std::string_view>> headers() const;
    std::size_t header_count() const { return fields_.size(); }
    // As new, with the memory of its text and header table kept.
    void clear();

    std::optional<std::size_t> content_length;  // digits only, no sign or space, fits size_t
    bool chunked = false;    // Transfer-Encoding: chunked was sent (the caller answers 411)
    bool keep_alive = true;  // HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with
                             // "Connection: keep-alive"

    // Where a header lies in text_ (offsets, so that a copy of the head is whole).
    struct Field {
        std::size_t name_at, name_size, value_at, value_size;
        std::string_view name(const std::string& text) const;
        // Offsets read_request_head set, within `text`.
        std::string_view value(const std::string& text) const {
            return std::string_view(text.data() + value_at, value_size);
        }
    };

private:
    friend Result<Done> read_request_head(std::string_view text, HttpRequestHead& head);
    // Where in fields_ the header named `name` (lowercase) is; fields_.size() when absent.
    std::size_t index_of(std::string_view name) const;
    std::string text_;  // the header lines as received, names lowercased; joined values after
    std::vector<Field> fields_;
    // Where in fields_ each of kKnownHeaders is (past the end when absent).
    std::array<std::uint32_t, kKnownHeaders.size()> known_ = absent_slots();
    static constexpr std::array<std::uint32_t, kKnownHeaders.size()> absent_slots() {
        std::array<std::uint32_t, kKnownHeaders.size()> slots{};
        slots.fill(UINT32_MAX);
        return slots;
    }
};

// `head`: the request line and header lines up to and including the empty line (CRLF or LF
// line ends); anything after that empty line is not read. Refused (a sentence for a 400 body)
// when malformed: another version than HTTP/1.0 or 1.1, a target that is not a path, folded
// headers, control characters, a name with a character outside the token set, a duplicate
// singleton header, Content-Length together with Transfer-Encoding, a Transfer-Encoding other
// than "chunked" (in any case) or on HTTP/1.0.
Result<HttpRequestHead> parse_request_head(std::string_view head);
// The same into `head`, where the caller keeps it: a head is not moved on its way to its
// request, and one kept from an earlier request is read into again without allocating.
Result<Done> read_request_head(std::string_view text, HttpRequestHead& head);

// Where the request head in `received` ends (after its empty line), or npos. `from`: where to
// look from, when what lies before it was looked at already (head_search_from).
std::size_t request_head_end(std::string_view received, std::size_t from = 0);
// Where to look from next, after request_head_end(received, ...) found no end: a head that
// arrives a byte at a time is then looked through once, not once per byte.
constexpr std::size_t head_search_from(std::string_view received) {
    // The first line end of a terminator not yet whole is one of the last two bytes.
    return received.size() < 2 ? 0 : received.size() - 2;
}

// Whether an Accept header value accepts `media` ("application/json", "text/event-stream"):
// its most specific matching range (the type itself, then type/*, then */*) has q > 0.
// Parameters other than q do not change which range matches. Absent header: false.
bool accepts(std::optional<std::string_view> accept, std::string_view media);

// The credentials of an Authorization value of the Bearer scheme (the scheme's name in any
// case, then one or more spaces), or nothing for another scheme or no credentials.
std::optional<std::string_view> bearer_credentials(std::string_view authorization);

// "HTTP/1.1 STATUS REASON\r\n" + headers + Content-Length (except for 204 and 304, which
// have no body) + Connection (keep-alive or close) + "\r\n" + body. Reason phrases for 200,
// 202, 204, 400, 401, 403, 404, 405, 406, 408, 409, 411, 413, 415, 421, 429, 431, 500, 503
// (none for other statuses). Control characters in header names and values become spaces, so
// a value taken from a peer cannot add a header.
std::string http_response(int status,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::string_view body, bool keep_alive);

// http_response in three parts, for a response whose head repeats: the status line and the
// headers, cleaned as above (built once and kept), ...
std::string http_response_head(int status,
                               const std::vector<std::pair<std::string, std::string>>& headers);
// ... then Content-Length (except for 204 and 304), Connection and the empty line, written
// into `buffer`, then the body (none for 204 and 304).
using HttpFramingBuffer = std::array<char, 96>;
std::string_view http_response_framing(int status, std::size_t body_size, bool keep_alive,
                                       HttpFramingBuffer& buffer);
inline bool http_status_has_body(int status) { return status != 204 && status != 304; }

// The head of a chunked streaming response (Transfer-Encoding: chunked, no body yet).
std::string http_stream_head(int status,
                             const std::vector<std::pair<std::string, std::string>>& headers,
                             bool keep_alive);

// One chunk: the size in hex, CRLF, the bytes, CRLF; "" for no bytes (an empty chunk would
// end the stream).
std::string http_chunk(std::string_view bytes);

// "0\r\n\r\n": the end of a chunked body.
std::string_view http_last_chunk();

}  // namespace mcpd
