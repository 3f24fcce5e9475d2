// The command table: one Command entry per ctl/cmd_<name>.cpp file.
//
// A command is described by its entry (name, usage, help, options, argument count) and three
// functions: build turns parsed arguments into the daemon request (pure, so argument errors are
// testable; requests are built by common/control_protocol.h), render turns a result into the
// human text (pure), and exec runs it. A new command is one new file: CMake lists every entry
// defined in a ctl/cmd_*.cpp into the table (see CMakeLists.txt). Commands that share all but
// their words may share a file (cmd_start_stop_restart.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/result.h"
#include "ctl/command_line.h"
#include "ctl/endpoint.h"

namespace mcpctl {

class DaemonClient;
class Output;

// Exit codes, as listed in `mcpctl --help`.
enum ExitCode : int {
    kExitOk = 0,
    kExitError = 1,       // the daemon refused, a server failed, a timeout ran out
    kExitUsage = 2,       // unknown command or option, missing argument
    kExitNotRunning = 3,  // nothing listens on the socket
};

// One option a command accepts besides the global ones.
struct OptionSpec {
    char short_name;              // '\0' when there is none
    std::string_view long_name;   // without the leading "--"; the key in CommandLine::options
    std::string_view value_name;  // empty for a flag, else what the help calls the value
    std::string_view description;
};

// Everything exec needs: the parsed invocation, where the daemon is, where output goes.
struct Context {
    const Invocation& invocation;
    Endpoint endpoint;
    Output& output;

    const CommandLine& line() const { return invocation.line; }
    const nlohmann::json& request() const { return invocation.request; }
};

// The request for the parsed arguments, or the usage error.
using BuildFn = mcpd::Result<nlohmann::json> (*)(const CommandLine& line);
// The human text for a successful result.
using RenderFn = std::string (*)(const nlohmann::json& result);
// Run the command; returns the exit code.
using ExecFn = int (*)(const Context& ctx);

struct Command {
    std::string_view name{};
    std::string_view usage{};    // what follows "mcpctl ", e.g. "logs [-f|--follow] NAME"
    std::string_view summary{};  // one line for `mcpctl --help`
    std::string_view help{};     // paragraphs for `mcpctl COMMAND --help`
    std::span<const OptionSpec> options{};
    int min_args = 0;
    int max_args = 0;         // kUnlimited for "NAME..."
    BuildFn build = nullptr;  // null: the command sends no request of its own
    RenderFn render = nullptr;
    ExecFn exec = nullptr;

    static constexpr int kUnlimited = -1;
};

// Every command, sorted by name.
std::span<const Command* const> all_commands();

// Resolve a name in `table`: an exact match, else the one command it is a prefix of. The
// failure says whether there is none or several, and which.
mcpd::Result<const Command*> resolve_command(std::span<const Command* const> table,
                                             std::string_view name);
mcpd::Result<const Command*> find_command(std::string_view name);

// How long to wait for a reply when nothing says otherwise.
inline constexpr mcpd::Duration kReplyTimeout = std::chrono::seconds(30);

// Connect, send `request` and wait up to `timeout` for the reply. On success stores the result
// and returns true; otherwise reports the failure (human or JSON) and stores the exit code.
bool call_daemon(const Context& ctx, const nlohmann::json& request, mcpd::Duration timeout,
                 nlohmann::json& result, int& exit_code);
// The same on `client`, for a command that goes on using the connection (logs --follow,
// shutdown --wait).
bool call_daemon(const Context& ctx, DaemonClient& client, const nlohmann::json& request,
                 mcpd::Duration timeout, nlohmann::json& result, int& exit_code);

// The exec of a plain command: send the built request, print the result (JSON or rendered).
int exec_request(const Context& ctx);

// The general usage line and the `mcpctl --help` text.
std::string_view general_usage();
std::string general_help();
// `mcpctl COMMAND --help`.
std::string command_help(const Command& command);

// `mcpctl --version`: the client's version, and the daemon's when it answers.
int exec_version_flag(const Context& ctx);

// The whole program: parse, dispatch, print; returns the exit code. `args` excludes argv[0].
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace mcpctl
