// mcpctl dial: join stdin and stdout to mcpd's control socket. `mcpctl --host ssh://HOST`
// runs it on HOST through ssh, so every command (and connect) reaches the remote daemon.
#include <signal.h>
#include <unistd.h>

#include "ctl/byte_relay.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

int exec(const Context& ctx) {
    if (ctx.endpoint.remote()) {
        ctx.output.error("dial joins this machine's mcpd socket; it takes no --host");
        return kExitUsage;
    }
    // A closed stdout (the ssh channel gone) is a write error to report, not a death.
    ::signal(SIGPIPE, SIG_IGN);
    DaemonClient client(ctx.endpoint);
    if (!client.connect()) {
        ctx.output.error(client.error().message);
        return client.error().exit_code;
    }
    const mcpd::Result<mcpd::Done> relayed =
        relay_bytes({STDIN_FILENO, STDOUT_FILENO, client.fd()}, {});
    if (relayed) return kExitOk;
    ctx.output.error(relayed.error());
    return kExitError;
}

}  // namespace

extern const Command cmd_dial{
    .name = "dial",
    .usage = "dial",
    .summary = "join stdin and stdout to mcpd's socket (run by --host ssh://)",
    .help =
        "Connect to mcpd's control socket and copy bytes both ways between it and stdin and\n"
        "stdout until mcpd closes the connection. 'mcpctl --host ssh://HOST COMMAND' runs\n"
        "'mcpctl dial' on HOST through ssh and talks to the daemon there over it; there is\n"
        "no other use for it. Messages go to stderr only.\n"
        "\n"
        "Exit status: 0 when mcpd closed the connection, 1 on an error, 3 when mcpd is not\n"
        "running.\n",
    .options = {},
    .min_args = 0,
    .max_args = 0,
    .build = nullptr,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
