#include "ctl/server_action.h"

#include "common/check.h"
#include "ctl/lazy_state.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

namespace control = mcpd::control;
using control::kDefaultWait;

// How much longer than the daemon's --wait we wait for its reply.
constexpr mcpd::Duration kReplyMargin = std::chrono::seconds(5);

// "demo: running (pid 123)", "demo: backoff (next start in 3s)", "demo: stopped", "demo:
// sleeping (cached 2026-11-29 10:14)".
std::string describe(const nlohmann::json& server) {
    if (std::string lazy = lazy_state_text(server); !lazy.empty())
        return field_text(server, "name") + ": " + lazy;
    std::string text = field_text(server, "name") + ": " + field_text(server, "state");
    if (server.contains("pid") && server["pid"].is_number())
        text += " (pid " + field_text(server, "pid") + ")";
    else if (server.contains("next_start_ms") && server["next_start_ms"].is_number())
        text += " (next start in " +
                mcpd::format_age(mcpd::Duration(server["next_start_ms"].get<std::int64_t>())) + ")";
    return text;
}

}  // namespace

mcpd::Result<nlohmann::json> build_server_action(const CommandLine& line) {
    const mcpd::Result<WaitOption> wait = parse_wait(line, kDefaultWait);
    if (!wait) return wait.failure();
    const std::optional<control::Command> command = control::command_named(line.command->name);
    MCPD_CHECK(command == control::Command::start || command == control::Command::stop ||
                   command == control::Command::restart,
               "a server action entry is named after no server action");
    return control::to_json(control::ActionRequest{*command, line.args, wait->wait, wait->timeout});
}

std::string render_server_action(const nlohmann::json& result) {
    std::string text;
    for (const auto& server : servers_in(result)) text += describe(server) + '\n';
    return text;
}

std::vector<std::string> failed_servers(const nlohmann::json& result) {
    std::vector<std::string> failed;
    for (const auto& server : servers_in(result)) {
        if (field_text(server, "state") != "failed") continue;
        const std::string name = field_text(server, "name");
        const bool has_error = server.contains("error") && server["error"].is_string();
        failed.push_back(
            name + ": " +
            (has_error ? server["error"].get<std::string>() : "failed (no reason given)"));
    }
    return failed;
}

int exec_server_action(const Context& ctx, bool failed_is_error) {
    const mcpd::Result<WaitOption> wait = parse_wait(ctx.line(), kDefaultWait);
    MCPD_CHECK(wait.ok(), "build() let a bad --wait or --timeout through");
    return exec_server_action(ctx, failed_is_error, wait.value());
}

int exec_server_action(const Context& ctx, bool failed_is_error, const WaitOption& wait) {
    const mcpd::Duration timeout = wait.wait ? wait.timeout + kReplyMargin : kReplyTimeout;

    nlohmann::json result;
    int exit_code = kExitOk;
    if (!call_daemon(ctx, ctx.request(), timeout, result, exit_code)) return exit_code;
    if (ctx.output.json())
        ctx.output.print_json(result);
    else
        ctx.output.print_text(render_server_action(result));

    if (!failed_is_error) return kExitOk;
    const auto failed = failed_servers(result);
    if (!ctx.output.json())
        for (const auto& line : failed) ctx.output.error(line);
    return failed.empty() ? kExitOk : kExitError;
}

}  // namespace mcpctl
