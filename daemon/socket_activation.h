// The control socket systemd passes (socket activation).
#pragma once

#include "daemon/control_server.h"

namespace mcpd {

// The listening socket named "control" (or the only one) among the descriptors systemd passed,
// checked to be a listening Unix stream socket. An empty fd with no error means "none passed:
// bind it yourself"; an error means something was passed but is unusable.
BindResult activated_control_socket();

}  // namespace mcpd
