// A TCP listening socket for mcpd's HTTP endpoints (metrics_http, the HTTP front door): bound
// to an address as common/listen_address.h reads it, with SO_REUSEADDR (a restarted mcpd gets
// its port back) and IPV6_V6ONLY for an IPv6 address.
#pragma once

#include <string_view>

#include "common/listen_address.h"
#include "common/result.h"
#include "common/unique_fd.h"

namespace mcpd {

// A listening socket on `address`, non-blocking and close-on-exec; `address.port` becomes the
// port it got. A failure ("cannot bind ADDRESS: why") names the address and, where it helps,
// the registry `key` to change.
Result<UniqueFd> bind_tcp_listener(ListenAddress& address, std::string_view key);
// The port `fd` (a listening socket of `address`) is bound to, into `address`: for a socket
// bound to port 0, or one taken over from the process before an upgrade in place.
Result<Done> read_bound_port(int fd, ListenAddress& address, std::string_view key);

}  // namespace mcpd
