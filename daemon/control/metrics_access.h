// Who may read GET /metrics ([daemon] metrics_listen): a scraper that holds the bearer token
// of [daemon] metrics_token_file (a file only mcpd's user or root may read, as Prometheus's
// bearer_token_file), and that names the endpoint's own address in Host, so that a web page
// whose name was pointed at this machine (DNS rebinding) is refused. Pure but for the file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "common/listen_address.h"
#include "common/result.h"

namespace mcpd {

// The longest token read from metrics_token_file.
inline constexpr std::size_t kMaxMetricsTokenBytes = 4096;

// The token in the file at `path`: its text without the line end, visible ASCII only. The
// file must be a regular file (not a symbolic link) owned by `owner` (mcpd's user) or root,
// that nobody else may read or write (mode 0600 or 0400). A failure is a sentence naming the
// file and what to do.
Result<std::string> read_metrics_token(const std::string& path, uid_t owner);

// Whether a request's Host header `host` names `bound`: the same address (any address when
// bound to 0.0.0.0 or ::) and port (80 when none is given); "localhost" for a loopback address.
bool host_names(std::string_view host, const ListenAddress& bound);

// Whether an Authorization header `authorization` is "Bearer TOKEN" with `token`, compared in
// a time that does not depend on where they differ.
bool bearer_matches(std::string_view authorization, std::string_view token);

}  // namespace mcpd
