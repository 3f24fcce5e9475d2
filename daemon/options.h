// mcpd's command line.
#pragma once

#include <string>
#include <vector>

#include "config/registry.h"
#include "daemon/control/socket_directory.h"

namespace mcpd {

struct CommandLine {
    enum class Mode { run, check_config, check_state, help, version };
    Mode mode = Mode::run;
    std::string config_path;  // empty: the default for this user
    std::string socket_path;  // empty: $MCPD_SOCKET, the registry, or the default
    std::string log_level;    // empty: the registry's
    std::string state_fd;     // --check-state, --restore-state: the descriptor the state is in
    bool restore = false;     // --restore-state: take over from the mcpd this binary replaces
    std::string error;        // a usage error, when not empty
};

CommandLine parse_command_line(const std::vector<std::string>& args);

// Where mcpd listens, why there, and who else may reach it.
struct SocketSettings {
    std::string path;
    std::string reason;       // for the log and `mcpctl version`
    bool is_default = false;  // a per-user default: its directory is mcpd's own
    SocketAccess access;
};

// In order: --socket (`flag`), $MCPD_SOCKET, the registry's [daemon] socket, else the per-user
// default; the file's group and mode from socket_group and socket_mode. Both running mcpd and
// --check-config go by it.
SocketSettings resolve_socket(const std::string& flag, const config::DaemonConfig& settings,
                              const std::string& config_path);

// $XDG_CONFIG_HOME/mcpd/mcpd.toml (~/.config/...), or /etc/mcpd/mcpd.toml for root.
std::string default_config_path();

std::string usage_text();

}  // namespace mcpd
