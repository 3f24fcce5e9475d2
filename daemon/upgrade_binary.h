// Which file an upgrade in place may exec (docs/UPGRADE.md): checked as tmux checks its
// socket directory, before it is run as mcpd's user.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace mcpd {

// The file this process runs, as it was named when it started (a file replaced since, as a
// package upgrade does, is named by the path it had: that path now holds the new binary).
std::string running_binary();

// Whether `path` may replace mcpd: an absolute path to a regular, executable file owned by
// root or `owner`, which neither its group nor others may write, in a directory owned by root
// or `owner` that others may not write. The failure names what is wrong.
Result<Done> check_upgrade_binary(const std::string& path, uid_t owner);

}  // namespace mcpd
