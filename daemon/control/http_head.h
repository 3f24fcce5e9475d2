// The head of an HTTP/1.x request, read by the metrics endpoint (metrics_http): its request
// line and the two headers it acts on, as http_message reads them (strict: anything it cannot
// read for certain, a folded header, a Host given twice, a target that is not a path, is
// refused as a whole).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mcpd {

struct HttpHead {
    std::string method;  // as sent: GET, HEAD, POST...
    std::string path;    // the target up to its query string
    int minor = 1;       // HTTP/1.minor
    std::optional<std::string> host;
    std::optional<std::string> authorization;
};

// `head`: the request line and header lines, up to and including the empty line (CRLF or LF
// line ends). Nothing when it is not a well-formed HTTP/1.x request head.
std::optional<HttpHead> parse_http_head(std::string_view head);

// Where the head of the request in `received` ends (after its empty line), or npos.
std::size_t http_head_end(std::string_view received);

}  // namespace mcpd
