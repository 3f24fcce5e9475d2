// Where mcpd is: a Unix socket on this machine, or one on another machine reached through
// OpenSSH (`--host ssh://[user@]host[:port][/socket]` or MCPD_HOST), the way DOCKER_HOST=ssh://
// works: mcpctl runs `ssh host mcpctl dial` and speaks the control protocol over its pipes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mcpctl {

struct SshTarget {
    std::string user;    // empty: ssh's own default (its config, then the local user)
    std::string host;    // a name, an address, or an IPv6 address without brackets
    std::string port;    // empty: ssh's own default
    std::string socket;  // the remote socket; empty: the remote mcpctl's default
};

struct Endpoint {
    std::string socket_path;        // the local socket when ssh is empty
    std::optional<SshTarget> ssh;  // set for a remote daemon
    std::string reason;             // why this socket or host (`mcpctl version --json`)

    bool remote() const { return ssh.has_value(); }
    // For messages: the socket path, or "ssh://user@host:port/socket" as given.
    std::string describe() const;
};

// Parse a --host value: "ssh://[user@]host[:port][/socket/path]" or "unix:///socket/path".
// Fails, saying why, when it is neither.
mcpd::Result<Endpoint> parse_host(std::string_view url);

// The endpoint for a command line: --host, else $MCPD_HOST, else the local socket (--socket,
// $MCPD_SOCKET, the default). With a remote host, --socket names the remote socket unless the
// URL has one.
mcpd::Result<Endpoint> resolve_endpoint(std::string_view host_flag, std::string_view socket_flag);

// The words of the ssh command for `target`: ["ssh", options..., "--", host, remote command].
// With $MCPD_SSH_COMMAND set (e.g. "ssh -i key -o StrictHostKeyChecking=no"), that text is run
// by /bin/sh in place of "ssh", the same way git uses GIT_SSH_COMMAND.
std::vector<std::string> ssh_command(const SshTarget& target, const char* ssh_command_env);

// `text` quoted for a POSIX shell (the remote command is a shell command line).
std::string shell_quote(std::string_view text);

}  // namespace mcpctl
