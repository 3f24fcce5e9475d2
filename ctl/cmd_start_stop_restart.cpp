// mcpctl start|stop|restart NAME... [--wait] [--timeout DURATION]: three entries over one
// request (server_action); they differ in their words and in whether a failed server is an
// error.
#include "ctl/server_action.h"

namespace mcpctl {

namespace {

// A failed server is what start and restart were asked to prevent; for stop it is at rest.
int exec_failed_is_error(const Context& ctx) {
    return exec_server_action(ctx, true);
}
int exec_failed_is_fine(const Context& ctx) {
    return exec_server_action(ctx, false);
}

}  // namespace

extern const Command cmd_start{
    .name = "start",
    .usage = "start NAME... [-w|--wait] [-t|--timeout DURATION]",
    .summary = "start servers (a failed one too)",
    .help =
        "Ask mcpd to start each NAME. A failed server is reset and tried again: its restart\n"
        "counter and back-off delay start over. Prints each server's state once mcpd has acted,\n"
        "or with --wait once every server is running or failed (or --timeout ran out). The exit\n"
        "status is 1 when mcpd refused or a server failed; its error is printed.\n",
    .options = kServerActionOptions,
    .min_args = 1,
    .max_args = Command::kUnlimited,
    .build = build_server_action,
    .render = render_server_action,
    .exec = exec_failed_is_error,
};

extern const Command cmd_stop{
    .name = "stop",
    .usage = "stop NAME... [-w|--wait] [-t|--timeout DURATION]",
    .summary = "stop servers",
    .help =
        "Ask mcpd to stop each NAME: close its stdin, then SIGTERM, then SIGKILL, as the\n"
        "registry's stop_grace and stop_timeout say. Prints each server's state once mcpd has\n"
        "acted, or with --wait once every server is stopped (or --timeout ran out).\n",
    .options = kServerActionOptions,
    .min_args = 1,
    .max_args = Command::kUnlimited,
    .build = build_server_action,
    .render = render_server_action,
    .exec = exec_failed_is_fine,
};

extern const Command cmd_restart{
    .name = "restart",
    .usage = "restart NAME... [-w|--wait] [-t|--timeout DURATION]",
    .summary = "stop servers and start them again",
    .help =
        "Stop each NAME and start it again; a failed server is reset. Prints each server's\n"
        "state once mcpd has acted, or with --wait once every server is running or failed (or\n"
        "--timeout ran out). The exit status is 1 when mcpd refused or a server failed; its\n"
        "error is printed.\n",
    .options = kServerActionOptions,
    .min_args = 1,
    .max_args = Command::kUnlimited,
    .build = build_server_action,
    .render = render_server_action,
    .exec = exec_failed_is_error,
};

}  // namespace mcpctl
