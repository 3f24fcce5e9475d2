// From argv to an exit code: parse, then help, version or the command's exec.
#include "ctl/command.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

// Usage errors print the message and the usage line of the command, or the general one.
int usage_error(const UsageError& error, std::ostream& err) {
    err << "mcpctl: " << error.message << '\n';
    if (error.command)
        err << "usage: mcpctl " << error.command->usage << '\n';
    else
        err << general_usage() << "\nRun 'mcpctl --help' for the list of commands.\n";
    err << std::flush;
    return kExitUsage;
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    Invocation invocation;
    UsageError error;
    if (!parse_invocation(args, invocation, error)) return usage_error(error, err);

    const CommandLine& line = invocation.line;
    Output output(out, err, line.json);
    if (line.help) {
        output.print_text(line.command ? command_help(*line.command) : general_help());
        return kExitOk;
    }
    mcpd::Result<Endpoint> endpoint = resolve_endpoint(line.host, line.socket);
    if (!endpoint) return usage_error(UsageError{endpoint.error(), nullptr}, err);
    const Context ctx{invocation, std::move(endpoint).value(), output};
    if (line.version) return exec_version_flag(ctx);
    if (!line.command) return usage_error(UsageError{"no command given", nullptr}, err);
    return line.command->exec(ctx);
}

}  // namespace mcpctl
