// The metrics endpoint reads the request head with the front door's strict reader
// (http_message); this keeps only the request line and the two headers it acts on.
#include "daemon/control/http_head.h"

#include "daemon/control/http_message.h"

namespace mcpd {

std::size_t http_head_end(std::string_view received) { return request_head_end(received); }

std::optional<HttpHead> parse_http_head(std::string_view text) {
    const Result<HttpRequestHead> parsed = parse_request_head(text);
    if (!parsed) return std::nullopt;
    HttpHead head;
    head.method = parsed->method;
    head.path = parsed->path;
    head.minor = parsed->minor;
    if (const auto host = parsed->header("host")) head.host = std::string(*host);
    if (const auto authorization = parsed->header("authorization"))
        head.authorization = std::string(*authorization);
    return head;
}

}  // namespace mcpd
