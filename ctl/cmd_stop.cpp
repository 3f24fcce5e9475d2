// mcpctl stop NAME... [--wait] [--timeout DURATION]: a thin entry over server_action.
#include "ctl/server_action.h"

namespace mcpctl {

namespace {

int exec(const Context& ctx) {
    return exec_server_action(ctx, /*failed_is_error=*/false);
}

}  // namespace

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
    .exec = exec,
};

}  // namespace mcpctl
