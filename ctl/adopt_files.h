// The file side of mcpctl adopt: backups beside an agent's file and replacing the file whole.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace mcpctl {

// The file that writing `path` should replace: a symbolic link's target (a dotfile kept in a
// repository stays linked), else `path` itself.
std::string write_target(const std::string& path);

// Replace the file at `path` with `text`: a temporary file in the same directory with the old
// file's permissions (0600 when there was none), written, synced, then renamed over it.
mcpd::Result<mcpd::Done> replace_file(const std::string& path, std::string_view text);

// Write `text` to `backup` unless that file exists already (the first backup is the one that
// matters). True when it was written now.
mcpd::Result<bool> write_backup(const std::string& backup, std::string_view text);

}  // namespace mcpctl
