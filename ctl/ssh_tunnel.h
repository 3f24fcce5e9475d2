// The ssh process behind a remote endpoint. Its stdin and stdout are one end of a socket pair;
// mcpctl uses the other end exactly as it would a connection to a local control socket, and the
// remote `mcpctl dial` joins the ssh channel to the remote daemon's socket.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "common/duration.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "ctl/endpoint.h"

namespace mcpctl {

struct ClientError;

class SshTunnel {
public:
    SshTunnel() = default;
    // Call after closing the connection: waits a little for ssh to see the end, then ends it.
    ~SshTunnel();
    SshTunnel(const SshTunnel&) = delete;
    SshTunnel& operator=(const SshTunnel&) = delete;

    // Start ssh for `target`; the value is mcpctl's end of the connection. Fails when ssh
    // cannot be started at all (a failed login shows up later, as an end).
    mcpd::Result<mcpd::UniqueFd> open(const SshTarget& target);

    bool running() const { return pid_ > 0 && !status_; }

    // Once the connection ended: why, when ssh or the remote mcpctl failed (waits up to
    // `timeout` for ssh to exit). Nullopt when ssh exited cleanly or is still running.
    std::optional<ClientError> failure(const SshTarget& target, mcpd::Duration timeout);

private:
    // Reap ssh if it has exited, waiting up to `timeout`.
    void wait(mcpd::Duration timeout);

    pid_t pid_ = -1;
    std::optional<int> status_;  // wait status once reaped
};

// What an exit of ssh (its wait status) means for the user; nullopt for a clean exit.
std::optional<ClientError> explain_ssh_exit(int wait_status, const SshTarget& target);

}  // namespace mcpctl
