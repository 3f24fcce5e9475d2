#include "ctl/command_line.h"

#include "ctl/command.h"

namespace mcpctl {

namespace {

// The options every command accepts, before or after its name.
constexpr OptionSpec kGlobalOptions[] = {
    {'\0', "socket", "PATH", "mcpd's control socket"},
    {'\0', "host", "URL", "a remote mcpd: ssh://[USER@]HOST[:PORT][/SOCKET]"},
    {'\0', "json", "", "machine-readable output"},
    {'h', "help", "", "explain the command"},
    {'\0', "version", "", "print the versions"},
};

// Look an option up in the global set, then in the command's own once it is known.
template <typename Match>
const OptionSpec* find_option(const Command* command, Match match) {
    for (const auto& spec : kGlobalOptions)
        if (match(spec)) return &spec;
    if (command)
        for (const auto& spec : command->options)
            if (match(spec)) return &spec;
    return nullptr;
}

// Store one option's value where it belongs.
void apply(const OptionSpec& spec, std::string value, CommandLine& out) {
    if (spec.long_name == "socket")
        out.socket = std::move(value);
    else if (spec.long_name == "host")
        out.host = std::move(value);
    else if (spec.long_name == "json")
        out.json = true;
    else if (spec.long_name == "help")
        out.help = true;
    else if (spec.long_name == "version")
        out.version = true;
    else
        out.options[std::string(spec.long_name)] = std::move(value);
}

std::string unknown_option(std::string_view option, const Command* command) {
    std::string message = "unknown option '" + std::string(option) + "'";
    if (command) message += " for '" + std::string(command->name) + "'";
    return message;
}

std::string needs_value(const OptionSpec& spec) {
    return "option '--" + std::string(spec.long_name) + "' needs a value (" +
           std::string(spec.value_name) + ")";
}

// Walks the arguments once; `i` is the index of the next one.
class Parser {
public:
    Parser(const std::vector<std::string>& args, CommandLine& out, UsageError& error)
        : args_(args), out_(out), error_(error) {}

    bool parse() {
        bool options_done = false;
        for (i_ = 0; i_ < args_.size(); ++i_) {
            const std::string& arg = args_[i_];
            if (!options_done && arg == "--") {
                options_done = true;
            } else if (!options_done && arg.starts_with("--")) {
                if (!parse_long(arg)) return false;
            } else if (!options_done && arg.size() > 1 && arg[0] == '-') {
                if (!parse_short(arg)) return false;
            } else if (!out_.command) {
                if (!name_command(arg)) return false;
            } else {
                out_.args.push_back(arg);
            }
        }
        return true;
    }

private:
    bool fail(std::string message) {
        error_.message = std::move(message);
        error_.command = out_.command;
        return false;
    }

    bool name_command(const std::string& name) {
        const mcpd::Result<const Command*> found = find_command(name);
        if (!found) return fail(found.error());
        out_.command = found.value();
        return true;
    }

    // "--name", "--name=value" or "--name value".
    bool parse_long(const std::string& arg) {
        const auto eq = arg.find('=');
        const std::string name = arg.substr(2, eq == std::string::npos ? eq : eq - 2);
        const OptionSpec* spec =
            find_option(out_.command, [&](const OptionSpec& o) { return o.long_name == name; });
        if (!spec) return fail(unknown_option("--" + name, out_.command));
        if (spec->value_name.empty()) {
            if (eq != std::string::npos) return fail("option '--" + name + "' takes no value");
            apply(*spec, {}, out_);
            return true;
        }
        if (eq != std::string::npos) {
            apply(*spec, arg.substr(eq + 1), out_);
            return true;
        }
        if (i_ + 1 >= args_.size()) return fail(needs_value(*spec));
        apply(*spec, args_[++i_], out_);
        return true;
    }

    // "-f", "-fn 5", "-n5", "-n 5".
    bool parse_short(const std::string& arg) {
        for (std::size_t k = 1; k < arg.size(); ++k) {
            const OptionSpec* spec = find_option(
                out_.command, [&](const OptionSpec& o) { return o.short_name == arg[k]; });
            if (!spec) return fail(unknown_option(std::string("-") + arg[k], out_.command));
            if (spec->value_name.empty()) {
                apply(*spec, {}, out_);
                continue;
            }
            if (k + 1 < arg.size()) {
                apply(*spec, arg.substr(k + 1), out_);
            } else {
                if (i_ + 1 >= args_.size()) return fail(needs_value(*spec));
                apply(*spec, args_[++i_], out_);
            }
            return true;
        }
        return true;
    }

    const std::vector<std::string>& args_;
    CommandLine& out_;
    UsageError& error_;
    std::size_t i_ = 0;
};

// Complain about too few or too many arguments, naming the command.
bool check_arg_count(const Command& command, const CommandLine& line, UsageError& error) {
    const int count = static_cast<int>(line.args.size());
    const std::string name(command.name);
    error.command = &command;
    if (count < command.min_args) {
        // Every command that takes arguments takes server names.
        error.message = "'" + name + "' needs a server NAME";
        return false;
    }
    if (command.max_args != Command::kUnlimited && count > command.max_args) {
        error.message =
            "too many arguments for '" + name + "': '" + line.args[command.max_args] + "'";
        return false;
    }
    return true;
}

}  // namespace

std::string CommandLine::value(std::string_view option, std::string_view fallback) const {
    const auto it = options.find(option);
    return it == options.end() ? std::string(fallback) : it->second;
}

bool parse_command_line(const std::vector<std::string>& args, CommandLine& out, UsageError& error) {
    out = CommandLine{};
    error = UsageError{};
    return Parser(args, out, error).parse();
}

bool parse_invocation(const std::vector<std::string>& args, Invocation& out, UsageError& error) {
    out = Invocation{};
    if (!parse_command_line(args, out.line, error)) return false;
    const Command* command = out.line.command;
    if (!command || out.line.help || out.line.version) return true;
    if (!check_arg_count(*command, out.line, error)) return false;
    if (!command->build) return true;
    mcpd::Result<nlohmann::json> request = command->build(out.line);
    if (!request) {
        error.message = request.error();
        error.command = command;
        return false;
    }
    out.request = std::move(request).value();
    return true;
}

mcpd::Result<WaitOption> parse_wait(const CommandLine& line, mcpd::Duration fallback,
                                    bool always_wait) {
    WaitOption out{always_wait || line.has("wait"), fallback};
    if (!line.has("timeout")) return out;
    const std::string text = line.value("timeout");
    if (!out.wait) return mcpd::permanent_failure("--timeout only applies with --wait");
    const auto parsed = mcpd::parse_duration(text);
    if (!parsed)
        return mcpd::permanent_failure(
            "--timeout wants a duration such as 30s, 500ms or 2m, not '" + text + "'");
    out.timeout = *parsed;
    return out;
}

}  // namespace mcpctl
