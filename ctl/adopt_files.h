// The file side of mcpctl adopt and import --write: writing as a careful editor does. A file is
// replaced whole (a temporary file beside it, synced, renamed over it) with its owner and
// mode; a new file is created exclusively, never through a link someone left in its place.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mcpctl {

// The file that writing `path` should replace: a symbolic link's target (a dotfile kept in a
// repository stays linked), else `path` itself.
std::string write_target(const std::string& path);

// Who owns a file and its permission bits.
struct FileOwner {
    uid_t uid = 0;
    gid_t gid = 0;
    mode_t mode = 0600;
};

// The owner and mode of the file at `path` (following links); nullopt when there is none.
std::optional<FileOwner> file_owner(const std::string& path);

// Replace the file at `path` with `text`: a temporary file in the same directory with the old
// file's owner and mode (`fresh` when there was none), written, synced, then renamed over it.
// When the owner cannot be kept (another user's file, and we are not root) nothing changes.
mcpd::Result<mcpd::Done> replace_file(const std::string& path, std::string_view text,
                                      mode_t fresh = 0600);

// Create `path` holding `text`, failing when anything is there already (a file, or a link),
// with `mode` and, when given, `owner`'s uid and gid. False when it exists.
mcpd::Result<bool> create_file(const std::string& path, std::string_view text, mode_t mode,
                               const std::optional<FileOwner>& owner = std::nullopt);

// Create the missing directories of `dir`, each 0700. Fails naming the one that failed.
mcpd::Result<mcpd::Done> make_private_dirs(const std::string& dir);

}  // namespace mcpctl
