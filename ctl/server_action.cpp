#include "ctl/server_action.h"

#include "ctl/output.h"

namespace mcpctl {

namespace {

// mcpd's own default for timeout_ms.
constexpr mcpd::Duration kDefaultWait = std::chrono::seconds(60);
// How much longer than the daemon's --wait we wait for its reply.
constexpr mcpd::Duration kReplyMargin = std::chrono::seconds(5);

// The servers array of a result, or an empty one.
const nlohmann::json& servers_of(const nlohmann::json& result) {
    static const nlohmann::json kNone = nlohmann::json::array();
    const auto it = result.find("servers");
    return it != result.end() && it->is_array() ? *it : kNone;
}

// "demo: running (pid 123)", "demo: backoff (next start in 3s)", "demo: stopped".
std::string describe(const nlohmann::json& server) {
    std::string text = field_text(server, "name") + ": " + field_text(server, "state");
    if (server.contains("pid") && server["pid"].is_number())
        text += " (pid " + field_text(server, "pid") + ")";
    else if (server.contains("next_start_ms") && server["next_start_ms"].is_number())
        text += " (next start in " +
                mcpd::format_age(mcpd::Duration(server["next_start_ms"].get<std::int64_t>())) + ")";
    return text;
}

}  // namespace

bool build_server_action(const CommandLine& line, nlohmann::json& request, std::string& error) {
    bool wait = false;
    mcpd::Duration timeout{};
    if (!parse_wait(line, kDefaultWait, wait, timeout, error)) return false;
    request = make_request(line.command->name);
    request["servers"] = line.args;
    request["wait"] = wait;
    if (wait) request["timeout_ms"] = timeout.count();
    return true;
}

std::string render_server_action(const nlohmann::json& result) {
    std::string text;
    for (const auto& server : servers_of(result)) text += describe(server) + '\n';
    return text;
}

std::vector<std::string> failed_servers(const nlohmann::json& result) {
    std::vector<std::string> failed;
    for (const auto& server : servers_of(result)) {
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
    const nlohmann::json& request = ctx.request();
    mcpd::Duration timeout = kReplyTimeout;
    if (request.value("wait", false))
        timeout = mcpd::Duration(request.value("timeout_ms", kDefaultWait.count())) + kReplyMargin;

    nlohmann::json result;
    int exit_code = kExitOk;
    if (!call_daemon(ctx, request, timeout, result, exit_code)) return exit_code;
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
