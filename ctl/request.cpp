// Helpers for commands that send one request and print one reply.
#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"

namespace mcpctl {

bool call_daemon(const Context& ctx, const nlohmann::json& request, mcpd::Duration timeout,
                 nlohmann::json& result, int& exit_code) {
    DaemonClient client(ctx.endpoint);
    return call_daemon(ctx, client, request, timeout, result, exit_code);
}

bool call_daemon(const Context& ctx, DaemonClient& client, const nlohmann::json& request,
                 mcpd::Duration timeout, nlohmann::json& result, int& exit_code) {
    mcpd::control::Reply reply;
    if (!client.connect() || !client.call(request, reply, timeout)) {
        ctx.output.client_error(client.error());
        exit_code = client.error().exit_code;
        return false;
    }
    if (!reply.ok) {
        ctx.output.daemon_error(reply.error);
        exit_code = kExitError;
        return false;
    }
    result = std::move(reply.result);
    exit_code = kExitOk;
    return true;
}

int exec_request(const Context& ctx) {
    nlohmann::json result;
    int exit_code = kExitOk;
    if (!call_daemon(ctx, ctx.request(), kReplyTimeout, result, exit_code)) return exit_code;
    if (ctx.output.json())
        ctx.output.print_json(result);
    else if (const RenderFn render = ctx.line().command->render)
        ctx.output.print_text(render(result));
    return kExitOk;
}

}  // namespace mcpctl
