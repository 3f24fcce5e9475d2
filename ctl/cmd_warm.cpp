// mcpctl warm NAME... [-t|--timeout DURATION]: start servers once and wait for them, so that a
// lazy server's cache of its lists is filled (it stops again after its idle_timeout). The
// request is start with --wait; only the words differ.
#include "common/control_protocol.h"
#include "ctl/server_action.h"

namespace mcpctl {

namespace {

constexpr OptionSpec kWarmOptions[] = {
    {'t', "timeout", "DURATION", "give up waiting after DURATION (30s, 2m; default 60s)"},
};

// --timeout DURATION, or the protocol's default wait; warm always waits.
mcpd::Result<WaitOption> warm_wait(const CommandLine& line) {
    return parse_wait(line, mcpd::control::kDefaultWait, true);
}

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    const mcpd::Result<WaitOption> wait = warm_wait(line);
    if (!wait) return wait.failure();
    return mcpd::control::to_json(mcpd::control::ActionRequest{
        mcpd::control::Command::start, line.args, true, wait->timeout});
}

int exec(const Context& ctx) {
    const mcpd::Result<WaitOption> wait = warm_wait(ctx.line());
    if (!wait) return kExitUsage;
    return exec_server_action(ctx, true, wait.value());
}

}  // namespace

extern const Command cmd_warm{
    .name = "warm",
    .usage = "warm NAME... [-t|--timeout DURATION]",
    .summary = "start lazy servers once to fill their cache",
    .help =
        "Start each NAME and wait until it runs (or failed, or --timeout ran out), so that a\n"
        "lazy server's handshake and lists are read into its cache; it stops again once it has\n"
        "been idle for its idle_timeout, and its sessions are then answered from the cache.\n"
        "The exit status is 1 when mcpd refused or a server failed; its error is printed.\n",
    .options = kWarmOptions,
    .min_args = 1,
    .max_args = Command::kUnlimited,
    .build = build,
    .render = render_server_action,
    .exec = exec,
};

}  // namespace mcpctl
