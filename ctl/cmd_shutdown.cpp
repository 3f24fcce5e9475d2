// mcpctl shutdown [--wait] [--timeout DURATION]: stop every server and the daemon.
#include "common/check.h"
#include "common/clock.h"
#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"
#include "ctl/server_action.h"

namespace mcpctl {

namespace {

using mcpd::control::kDefaultWait;

// Checks --wait and --timeout, which only mcpctl uses: the request is the bare command.
mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    const mcpd::Result<WaitOption> wait = parse_wait(line, kDefaultWait);
    if (!wait) return wait.failure();
    return mcpd::control::request(mcpd::control::Command::shutdown);
}

// Wait for mcpd to close the connection that asked, which it does at the latest when its
// process exits. Probing the socket instead would not work under socket activation: systemd
// keeps listening and would start a fresh mcpd for the probe.
bool wait_for_exit(const Context& ctx, DaemonClient& client, mcpd::Duration timeout) {
    if (client.wait_closed(timeout)) return true;
    ctx.output.client_error(ClientError{kExitError, "timeout",
                                        "mcpd is still shutting down after " +
                                            mcpd::format_duration(timeout) +
                                            " (see 'mcpctl status' or its log)"});
    return false;
}

int exec(const Context& ctx) {
    const mcpd::Result<WaitOption> wait = parse_wait(ctx.line(), kDefaultWait);
    MCPD_CHECK(wait.ok(), "build() let a bad --wait or --timeout through");

    DaemonClient client(ctx.endpoint);
    nlohmann::json result;
    int exit_code = kExitOk;
    if (!call_daemon(ctx, client, ctx.request(), kReplyTimeout, result, exit_code))
        return exit_code;
    if (wait->wait && !wait_for_exit(ctx, client, wait->timeout)) return kExitError;
    if (ctx.output.json())
        ctx.output.print_json(result);
    else
        ctx.output.print_text(wait->wait ? "mcpd has stopped\n" : "mcpd is shutting down\n");
    return kExitOk;
}

}  // namespace

extern const Command cmd_shutdown{
    .name = "shutdown",
    .usage = "shutdown [-w|--wait] [-t|--timeout DURATION]",
    .summary = "stop every server, then mcpd itself",
    .help =
        "Ask mcpd to stop every server (each with its own stop ladder) and exit. With\n"
        "--wait, return only when mcpd has closed the connection, that is, when it has\n"
        "exited, or fail after --timeout (default 60s).\n",
    .options = kServerActionOptions,
    .min_args = 0,
    .max_args = 0,
    .build = build,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
