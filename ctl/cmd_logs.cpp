// mcpctl logs [-f] [-n N] NAME: a server's recent stderr lines, then optionally new ones.
#include <charconv>

#include "common/control_protocol.h"
#include "common/terminal_text.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/interrupt.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

namespace control = mcpd::control;

// The texts below say 50.
static_assert(control::kDefaultLogLines == 50);

constexpr OptionSpec kOptions[] = {
    {'f', "follow", "", "keep printing new lines until ^C"},
    {'n', "lines", "N", "how many recent lines to print first (default 50)"},
};

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    control::LogsRequest request{line.args.at(0), control::kDefaultLogLines, line.has("follow")};
    if (line.has("lines")) {
        // An int: a count past it is a usage error here, not a refusal from mcpd.
        int lines = 0;
        const std::string text = line.value("lines");
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, lines);
        if (text.empty() || ec != std::errc() || ptr != end || lines < 0)
            return mcpd::permanent_failure("--lines wants a number of lines (0 or more), not '" +
                                           text + "'");
        request.lines = lines;
    }
    return control::to_json(request);
}

// One log line for the terminal: the server wrote it, so its control characters are escaped.
std::string line_text(const nlohmann::json& line) {
    std::string text = mcpd::escape_controls(
        line.is_string() ? line.get<std::string>()
                         : line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    text += '\n';
    return text;
}

std::string render(const nlohmann::json& result) {
    std::string text;
    if (result.contains("lines") && result["lines"].is_array())
        for (const auto& line : result["lines"]) text += line_text(line);
    return text;
}

// Print {"log": "..."} messages until the daemon closes the connection or ^C.
int follow(const Context& ctx, DaemonClient& client) {
    const InterruptGuard interrupt;
    for (;;) {
        nlohmann::json message;
        switch (client.read(message, std::nullopt, &interrupt)) {
            case DaemonClient::Read::message:
                break;
            case DaemonClient::Read::closed:
            case DaemonClient::Read::interrupted:
                return kExitOk;
            case DaemonClient::Read::failed:
                ctx.output.client_error(client.error());
                return client.error().exit_code;
        }
        if (message.contains("ok") && message["ok"] == false) {
            ctx.output.daemon_error(message.value("error", nlohmann::json::object()));
            return kExitError;
        }
        if (ctx.output.json())
            ctx.output.print_json(message);
        else if (const std::optional<std::string> log = control::log_line(message))
            ctx.output.print_text(line_text(*log));
    }
}

int exec(const Context& ctx) {
    DaemonClient client(ctx.endpoint);
    nlohmann::json result;
    int exit_code = kExitOk;
    if (!call_daemon(ctx, client, ctx.request(), kReplyTimeout, result, exit_code))
        return exit_code;
    if (ctx.output.json())
        ctx.output.print_json(result);
    else
        ctx.output.print_text(render(result));
    return ctx.line().has("follow") ? follow(ctx, client) : kExitOk;
}

}  // namespace

extern const Command cmd_logs{
    .name = "logs",
    .usage = "logs [-f|--follow] [-n N|--lines N] NAME",
    .summary = "print a server's recent stderr lines; follow new ones",
    .help =
        "Print the last N lines (default 50) the server wrote on its stderr, as kept in\n"
        "mcpd's per-server ring. With --follow, keep printing new lines as they arrive\n"
        "until mcpd closes the connection or ^C (exit status 0). With --json, the first\n"
        "reply and then each {\"log\": \"...\"} message are printed one per line.\n"
        "Control characters the server wrote (escape sequences, bells, carriage returns)\n"
        "are printed as \\u00XX, bytes that are not UTF-8 as \\xXX.\n",
    .options = kOptions,
    .min_args = 1,
    .max_args = 1,
    .build = build,
    .render = render,
    .exec = exec,
};

}  // namespace mcpctl
