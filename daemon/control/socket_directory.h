// A safe home for the control socket. Another local user must not be able to choose where
// mcpd listens, swap the socket for one of theirs, or lock mcpd out by getting there first
// (the checks tmux makes of /tmp/tmux-UID, made here of every socket directory).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace mcpd {

// Who besides mcpd's user may reach the socket: its file mode and group.
struct SocketAccess {
    mode_t mode = 0600;
    std::optional<gid_t> group;
};

// The mode of a directory that holds a socket with `access`: mcpd's user may do anything,
// and the classes the socket lets in may search it (never list or write it).
mode_t directory_mode_for(const SocketAccess& access);

// Check, and where needed create or tighten, the directory `dir` that will hold the socket.
// `private_dir`: the directory is mcpd's own (the per-user defaults, and any it creates): it
// must belong to this user and give others no more than directory_mode_for(access); a mode
// that only lets others read or search it is tightened, one that lets them write is refused.
// Otherwise (a directory the administrator named): it must be a directory of this user's or
// root's that others cannot write to, unless it is sticky (/tmp). A symbolic link is refused
// either way. Returns false with a sentence that says what is wrong and how to fix it.
bool prepare_socket_directory(const std::string& dir, const SocketAccess& access,
                              bool private_dir, std::string& error);

}  // namespace mcpd
