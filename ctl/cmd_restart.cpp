// mcpctl restart NAME... [--wait] [--timeout DURATION]: a thin entry over server_action.
#include "ctl/server_action.h"

namespace mcpctl {

namespace {

int exec(const Context& ctx) {
    return exec_server_action(ctx, /*failed_is_error=*/true);
}

}  // namespace

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
    .exec = exec,
};

}  // namespace mcpctl
