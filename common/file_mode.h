// A file mode as people read it in errors and logs: "0600", "0755", "1777".
#pragma once

#include <sys/types.h>

#include <string>

namespace mcpd {

// The permission bits (and setuid, setgid, sticky) in four octal digits.
std::string mode_octal(mode_t mode);

}  // namespace mcpd
