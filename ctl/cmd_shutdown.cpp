// mcpctl shutdown [--wait]: stop every server and the daemon.
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"
#include "ctl/server_action.h"

namespace mcpctl {

namespace {

constexpr mcpd::Duration kDefaultWait = std::chrono::seconds(60);

bool build(const CommandLine& line, nlohmann::json& request, std::string& error) {
    bool wait = false;
    mcpd::Duration timeout{};
    if (!parse_wait(line, kDefaultWait, wait, timeout, error)) return false;
    request = make_request("shutdown");
    return true;
}

// Wait for mcpd to close the connection that asked, which it does at the latest when its
// process exits. Probing the socket instead would not work under socket activation: systemd
// keeps listening and would start a fresh mcpd for the probe.
bool wait_for_exit(const Context& ctx, DaemonClient& client, mcpd::Duration timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    nlohmann::json ignored;
    DaemonClient::Read read;
    do {
        const auto left =
            std::chrono::duration_cast<mcpd::Duration>(deadline - std::chrono::steady_clock::now());
        read = client.read(ignored, std::max(left, mcpd::Duration::zero()));
    } while (read == DaemonClient::Read::message);
    // However else the connection ended (closed, reset, cut mid-line), mcpd let go of it.
    if (read != DaemonClient::Read::failed || client.error().code != "timeout") return true;
    ctx.output.client_error(ClientError{kExitError, "timeout",
                                        "mcpd is still shutting down after " +
                                            mcpd::format_duration(timeout) +
                                            " (see 'mcpctl status' or its log)"});
    return false;
}

int exec(const Context& ctx) {
    bool wait = false;
    mcpd::Duration timeout{};
    std::string unused;
    parse_wait(ctx.line(), kDefaultWait, wait, timeout, unused);

    DaemonClient client(ctx.endpoint);
    nlohmann::json reply;
    if (!client.connect() || !client.call(ctx.request(), reply, kReplyTimeout)) {
        ctx.output.client_error(client.error());
        return client.error().exit_code;
    }
    if (!reply["ok"].get<bool>()) {
        ctx.output.daemon_error(reply["error"]);
        return kExitError;
    }
    if (wait && !wait_for_exit(ctx, client, timeout)) return kExitError;
    if (ctx.output.json())
        ctx.output.print_json(reply.value("result", nlohmann::json::object()));
    else
        ctx.output.print_text(wait ? "mcpd has stopped\n" : "mcpd is shutting down\n");
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
