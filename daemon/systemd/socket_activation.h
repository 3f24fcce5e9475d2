// The control socket systemd passes (socket activation).
#pragma once

#include "daemon/control/control_server.h"

namespace mcpd {

// The listening socket named "control" (or the only one) among the descriptors systemd passed,
// checked to be a listening Unix stream socket. An empty descriptor means "none passed: bind it
// yourself"; a failure means something was passed but is unusable.
Result<UniqueFd> activated_control_socket();

}  // namespace mcpd
