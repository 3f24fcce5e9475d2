// mcpctl help [COMMAND], and the texts behind --help.
#include <cctype>

#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/output.h"

namespace mcpctl {

extern const Command cmd_help;

namespace {

// "  -n, --lines N" / "      --wait" for one option.
std::string option_text(const OptionSpec& spec) {
    std::string text = spec.short_name ? std::string("  -") + spec.short_name + ", " : "      ";
    // Appended piece by piece: gcc 12 at -O3 takes `"--" + std::string(...)` for an
    // overlapping copy (a false -Wrestrict).
    text += "--";
    text += spec.long_name;
    if (!spec.value_name.empty()) {
        text += ' ';
        text += spec.value_name;
    }
    return text;
}

int exec(const Context& ctx) {
    if (ctx.line().args.empty()) {
        ctx.output.print_text(general_help());
        return kExitOk;
    }
    const mcpd::Result<const Command*> command = find_command(ctx.line().args[0]);
    if (!command) {
        ctx.output.error(command.error());
        ctx.output.err() << "usage: mcpctl " << cmd_help.usage << '\n';
        return kExitUsage;
    }
    ctx.output.print_text(command_help(*command.value()));
    return kExitOk;
}

}  // namespace

std::string_view general_usage() {
    return "usage: mcpctl [--socket PATH | --host URL] [--json] COMMAND [ARGS...]";
}

std::string general_help() {
    std::string text(general_usage());
    text += "\n\nControl mcpd, the supervisor of MCP servers.\n\nCommands:\n";
    std::vector<std::vector<std::string>> rows;
    for (const Command* command : all_commands())
        rows.push_back({"  " + std::string(command->name), std::string(command->summary)});
    text += format_table({}, rows);
    text +=
        "\nRun 'mcpctl COMMAND --help' for a command's arguments. A command may be shortened\n"
        "to any prefix that names only it ('rel' for reload).\n"
        "\nGlobal options, before or after the command:\n"
        "  --socket PATH  mcpd's control socket; default $MCPD_SOCKET, else\n"
        "                 " +
        mcpd::control::default_socket_path() +
        "\n"
        "  --host URL     a daemon on another machine, through OpenSSH:\n"
        "                 ssh://[USER@]HOST[:PORT][/SOCKET]; default $MCPD_HOST. Runs\n"
        "                 'ssh HOST mcpctl dial' ($MCPD_SSH_COMMAND replaces 'ssh')\n"
        "  --json         print mcpd's reply as JSON on stdout, errors as {\"error\": {...}}\n"
        "  -h, --help     this text; 'mcpctl COMMAND --help' for one command\n"
        "  --version      print mcpctl's version, and mcpd's when it answers\n"
        "\nExit status:\n"
        "  0  success\n"
        "  1  error: mcpd refused the request, a server failed, a timeout ran out\n"
        "  2  usage error: unknown command or option, missing or bad argument\n"
        "  3  mcpd is not running (nothing listens on the socket)\n";
    return text;
}

std::string command_help(const Command& command) {
    std::string text = "usage: mcpctl " + std::string(command.usage) + "\n\n";
    std::string summary(command.summary);
    if (!summary.empty()) summary[0] = static_cast<char>(std::toupper(summary[0]));
    text += summary + ".\n\n" + std::string(command.help);
    if (!command.options.empty()) {
        text += "\nOptions:\n";
        std::vector<std::vector<std::string>> rows;
        for (const auto& spec : command.options)
            rows.push_back({option_text(spec), std::string(spec.description)});
        text += format_table({}, rows);
    }
    return text;
}

extern const Command cmd_help{
    .name = "help",
    .usage = "help [COMMAND]",
    .summary = "list the commands, or explain one",
    .help =
        "Without COMMAND, the same as 'mcpctl --help'; with it, the same as\n"
        "'mcpctl COMMAND --help'.\n",
    .options = {},
    .min_args = 0,
    .max_args = 1,
    .build = nullptr,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
