// mcpctl start NAME... [--wait] [--timeout DURATION]: a thin entry over server_action.
#include "ctl/server_action.h"

namespace mcpctl {

namespace {

int exec(const Context& ctx) {
    return exec_server_action(ctx, /*failed_is_error=*/true);
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
    .exec = exec,
};

}  // namespace mcpctl
