// mcpd's command line.
#pragma once

#include <string>
#include <vector>

namespace mcpd {

struct CommandLine {
    enum class Mode { run, check_config, help, version };
    Mode mode = Mode::run;
    std::string config_path;  // empty: the default for this user
    std::string socket_path;  // empty: $MCPD_SOCKET, the registry, or the default
    std::string log_level;    // empty: the registry's
    std::string error;        // a usage error, when not empty
};

CommandLine parse_command_line(const std::vector<std::string>& args);

// $XDG_CONFIG_HOME/mcpd/mcpd.toml (~/.config/...), or /etc/mcpd/mcpd.toml for root.
std::string default_config_path();

std::string usage_text();

}  // namespace mcpd
