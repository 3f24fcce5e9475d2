// mkdir -p for mcpd's own directories: what it makes is 0700; what exists is left as it is
// (the caller checks its owner and mode before use).
#pragma once

#include <string>

#include "common/result.h"

namespace mcpd {

Result<Done> make_private_directories(const std::string& directory);

// mcpd's own state directory: the first of systemd's STATE_DIRECTORY (StateDirectory=), else
// $XDG_STATE_HOME/mcpd, else ~/.local/state/mcpd; empty when none of them is known. The list
// cache, the HTTP state and the servers' {state} live below it.
std::string own_state_directory();

// Likewise its cache directory: CACHE_DIRECTORY, $XDG_CACHE_HOME/mcpd, ~/.cache/mcpd (the
// servers' {cache}).
std::string own_cache_directory();

}  // namespace mcpd
