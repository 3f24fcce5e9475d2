// mkdir -p for mcpd's own directories: what it makes is 0700; what exists is left as it is
// (the caller checks its owner and mode before use).
#pragma once

#include <string>

#include "common/result.h"

namespace mcpd {

Result<Done> make_private_directories(const std::string& directory);

}  // namespace mcpd
