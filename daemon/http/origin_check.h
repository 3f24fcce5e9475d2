// DNS rebinding: a web page on evil.example that makes its own name resolve to 127.0.0.1 can
// make a browser send requests to mcpd's HTTP listener. Such requests still carry the page's
// name in Host (and, from scripts, in Origin), so the front door answers only names it
// serves. Pure: the listener passes the headers it read.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mcpd {

struct OriginPolicy {
    // Host names accepted in Host and Origin, lowercase, without port; IPv6 in brackets "[::1]".
    std::vector<std::string> hosts;
};

// For a listener bound to `bind_host` ("127.0.0.1", "::1", "0.0.0.0", "localhost", a name, or
// "" for a unix socket): localhost, 127.0.0.1 and [::1] always, plus bind_host itself when it
// is named explicitly and is not a wildcard (0.0.0.0, ::). An IPv6 bind_host is bracketed.
OriginPolicy origin_policy_for(std::string_view bind_host);

// The Host header: "name", "name:port", "[v6]" or "[v6]:port", compared without regard to
// case. Refused (a sentence for a 403 or 421 body, which never repeats the header) when
// missing on TCP, malformed, or naming a host outside the policy. On a unix socket
// (`unix_socket`), which no browser reaches, a missing Host is accepted and a present one
// need only be well-formed.
Result<Done> check_host(std::optional<std::string_view> host, const OriginPolicy& policy,
                        bool unix_socket);

// The Origin header: absent is accepted (clients that are not browsers send none); "null" is
// refused; otherwise exactly "http://" or "https://", a host of the policy and an optional
// ":port", and nothing else (no user information, no path).
Result<Done> check_origin(std::optional<std::string_view> origin, const OriginPolicy& policy);

}  // namespace mcpd
