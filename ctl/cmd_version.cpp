// mcpctl version (and --version): the client's and the daemon's versions.
#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

// --version should not hang on a stuck daemon.
constexpr mcpd::Duration kFlagTimeout = std::chrono::seconds(2);

// The client's side, with the socket (or host) it uses and why: a client started with a
// minimal environment shows here where it looked.
nlohmann::json client_version(const Endpoint& endpoint) {
    return {{"version", MCPD_VERSION},
            {"protocol", mcpd::control::kProtocolVersion},
            {endpoint.remote() ? "host" : "socket", endpoint.describe()},
            {"reason", endpoint.reason}};
}

std::string client_line() {
    return "mcpctl " MCPD_VERSION " (protocol " + std::to_string(mcpd::control::kProtocolVersion) +
           ")\n";
}

mcpd::Result<nlohmann::json> build(const CommandLine&) {
    return mcpd::control::request(mcpd::control::Command::version);
}

// "mcpd 0.1.0 (protocol 1, pid 1234)".
std::string render(const nlohmann::json& result) {
    return "mcpd " + field_text(result, "version") + " (protocol " +
           field_text(result, "protocol") + ", pid " + field_text(result, "pid") + ")\n";
}

int exec(const Context& ctx) {
    if (!ctx.output.json()) ctx.output.print_text(client_line());
    nlohmann::json result;
    int exit_code = kExitOk;
    if (!call_daemon(ctx, ctx.request(), kReplyTimeout, result, exit_code)) return exit_code;
    if (ctx.output.json())
        ctx.output.print_json({{"client", client_version(ctx.endpoint)}, {"daemon", result}});
    else
        ctx.output.print_text(render(result));
    return kExitOk;
}

}  // namespace

int exec_version_flag(const Context& ctx) {
    // Quietly: a daemon that does not answer is no error here.
    DaemonClient client(ctx.endpoint);
    mcpd::control::Reply reply;
    const bool answered =
        client.connect(kFlagTimeout) &&
        client.call(mcpd::control::request(mcpd::control::Command::version), reply, kFlagTimeout) &&
        reply.ok;
    const nlohmann::json daemon = answered ? reply.result : nlohmann::json(nullptr);
    if (ctx.output.json()) {
        ctx.output.print_json({{"client", client_version(ctx.endpoint)}, {"daemon", daemon}});
    } else {
        ctx.output.print_text(client_line());
        if (answered) ctx.output.print_text(render(daemon));
    }
    return kExitOk;
}

extern const Command cmd_version{
    .name = "version",
    .usage = "version",
    .summary = "print mcpctl's and mcpd's versions",
    .help =
        "Print mcpctl's version and control protocol, then ask mcpd for its own (and its\n"
        "pid). Unlike --version, fails when mcpd does not answer. With --json prints\n"
        "{\"client\": {...}, \"daemon\": {...}}; the client part names the socket mcpctl\n"
        "uses and why (--socket, $MCPD_SOCKET, $XDG_RUNTIME_DIR, /run/user/UID, ...).\n",
    .options = {},
    .min_args = 0,
    .max_args = 0,
    .build = build,
    .render = render,
    .exec = exec,
};

}  // namespace mcpctl
