#include "daemon/options.h"

#include <unistd.h>

#include <cstdlib>

#include "common/accounts.h"
#include "common/socket_location.h"
#include "config/registry.h"

namespace mcpd {

CommandLine parse_command_line(const std::vector<std::string>& args) {
    CommandLine out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        std::string value;
        bool has_value = false;
        if (arg.starts_with("--") && arg.find('=') != std::string::npos) {
            value = arg.substr(arg.find('=') + 1);
            arg = arg.substr(0, arg.find('='));
            has_value = true;
        }
        auto take = [&](std::string& into) {
            if (has_value) {
                into = value;
                return true;
            }
            if (i + 1 >= args.size()) {
                out.error = arg + " needs a value";
                return false;
            }
            into = args[++i];
            return true;
        };
        const bool is_flag = arg == "-h" || arg == "--help" || arg == "-V" || arg == "--version";
        if (is_flag && has_value) {
            out.error = "option '" + arg + "' takes no value";
            return out;
        }
        if (arg == "-h" || arg == "--help") {
            out.mode = CommandLine::Mode::help;
        } else if (arg == "-V" || arg == "--version") {
            out.mode = CommandLine::Mode::version;
        } else if (arg == "-c" || arg == "--config") {
            if (!take(out.config_path)) return out;
        } else if (arg == "--check-config") {
            out.mode = CommandLine::Mode::check_config;
            if (!take(out.config_path)) return out;
        } else if (arg == "--check-state") {
            out.mode = CommandLine::Mode::check_state;
            if (!take(out.state_fd)) return out;
        } else if (arg == "--restore-state") {
            // Only what an upgrade in place passes (docs/UPGRADE.md): run, from its state.
            out.restore = true;
            if (!take(out.state_fd)) return out;
        } else if (arg == "-s" || arg == "--socket") {
            if (!take(out.socket_path)) return out;
        } else if (arg == "--log-level") {
            if (!take(out.log_level)) return out;
        } else {
            out.error = "unknown option '" + args[i] + "'";
            return out;
        }
    }
    return out;
}

SocketSettings resolve_socket(const std::string& flag, const config::DaemonConfig& settings,
                              const std::string& config_path) {
    SocketSettings out;
    const char* env_socket = std::getenv("MCPD_SOCKET");
    if (!flag.empty()) {
        out.path = flag;
        out.reason = "--socket names it";
    } else if (env_socket != nullptr && env_socket[0] != '\0') {
        out.path = env_socket;
        out.reason = "$MCPD_SOCKET names it";
    } else if (!settings.socket.empty()) {
        out.path = settings.socket;
        out.reason = "[daemon] socket in " + config_path + " names it";
    } else {
        const control::SocketChoice choice = control::default_socket();
        out.path = choice.path;
        out.reason = choice.reason;
        out.is_default = true;
    }
    if (!settings.socket_group.empty()) out.access.group = accounts::gid_of(settings.socket_group);
    out.access.mode = settings.socket_mode != 0 ? settings.socket_mode
                      : out.access.group        ? 0660
                                                : 0600;
    return out;
}

std::string default_config_path() {
    if (::getuid() == 0) return "/etc/mcpd/mcpd.toml";
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/mcpd/mcpd.toml";
    const char* home = std::getenv("HOME");
    return std::string(home != nullptr ? home : "") + "/.config/mcpd/mcpd.toml";
}

std::string usage_text() {
    return "usage: mcpd [--config FILE] [--socket PATH] [--log-level LEVEL]\n"
           "       mcpd --check-config FILE\n"
           "       mcpd --check-state FD\n"
           "       mcpd --help | --version\n"
           "\n"
           "Supervises the MCP servers listed in a TOML registry and shares them through a\n"
           "Unix socket; control it with mcpctl.\n"
           "\n"
           "  -c, --config FILE     the registry (default: " +
           default_config_path() +
           ")\n"
           "  -s, --socket PATH     the control socket (default: $MCPD_SOCKET, the registry's\n"
           "                        [daemon].socket, else $XDG_RUNTIME_DIR/mcpd/mcpd.sock)\n"
           "      --log-level LEVEL debug, info, warning or error (default: the registry's)\n"
           "      --check-config FILE  report every problem in FILE and exit (1 if any)\n"
           "      --check-state FD  read an upgrade's state from descriptor FD, say whether\n"
           "                        this binary can take it, and exit (1 if not)\n"
           "\n"
           "Signals: SIGTERM/SIGINT stop every server and exit (a second one kills them at\n"
           "once); SIGHUP reloads the registry.\n";
}

}  // namespace mcpd
