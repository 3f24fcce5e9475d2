// Parsing mcpctl's command line: global options, the command name, its options and arguments.
//
// Grammar: mcpctl [GLOBAL...] COMMAND [GLOBAL | OPTION | ARG]...
// Global options (--socket PATH, --host URL, --json, --help, --version) may come before or after the
// command name; the command's own options only after it. Long options take their value as
// "--opt VALUE" or "--opt=VALUE", short ones as "-n VALUE", "-nVALUE", and flags bundle ("-fn 5").
// "--" ends the options.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/result.h"

namespace mcpctl {

struct Command;

struct CommandLine {
    std::string socket;  // --socket; empty when not given
    std::string host;    // --host; empty when not given
    bool json = false;
    bool help = false;
    bool version = false;
    const Command* command = nullptr;  // null when no command was named
    std::vector<std::string> args;     // positional arguments after the command name
    std::map<std::string, std::string, std::less<>> options;  // long name -> value ("" for flags)

    bool has(std::string_view option) const { return options.find(option) != options.end(); }
    // The option's value, or `fallback` when it was not given.
    std::string value(std::string_view option, std::string_view fallback = {}) const;
};

struct UsageError {
    std::string message;
    const Command* command = nullptr;  // whose usage line to print; null for the general one
};

// A parsed command line and, when the command sends one, its request.
struct Invocation {
    CommandLine line;
    nlohmann::json request;
};

// Split `args` (argv without argv[0]) into `out`. False and `error` on a usage error.
bool parse_command_line(const std::vector<std::string>& args, CommandLine& out, UsageError& error);

// parse_command_line, then the argument count and the command's build, unless --help or
// --version makes them moot.
bool parse_invocation(const std::vector<std::string>& args, Invocation& out, UsageError& error);

// The --wait/--timeout pair shared by start, stop, restart and shutdown.
struct WaitOption {
    bool wait = false;
    mcpd::Duration timeout{};  // `fallback` unless --timeout gave one
};
// Fails when --timeout is not a duration or is given without --wait (`always_wait`: the
// command waits whether or not --wait is given, as warm does).
mcpd::Result<WaitOption> parse_wait(const CommandLine& line, mcpd::Duration fallback,
                                    bool always_wait = false);

}  // namespace mcpctl
