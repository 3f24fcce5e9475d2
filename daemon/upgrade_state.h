// What one mcpd hands to the binary that replaces it in place (docs/UPGRADE.md): the body of
// the state file (common/state_file.h), read and checked here before anything of it is used.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace mcpd {

struct CarriedServer {
    std::string name;
    nlohmann::json supervisor;  // Supervisor::snapshot()
};

struct UpgradeState {
    std::string mcpd_version;  // of the process that wrote it
    pid_t pid = 0;             // the process: the same after the exec
    std::string config_path;
    std::string socket_path;
    // Where the control socket really is (systemd may have bound it elsewhere), whether
    // systemd passed it, and the listening descriptor kept open across the exec.
    std::string listening_path;
    bool socket_activated = false;
    int control_fd = -1;
    // The keeper (daemon/server/keeper.h) and its pipe's write end; -1: none.
    pid_t keeper_pid = -1;
    int keeper_fd = -1;
    std::int64_t uptime_ms = 0;
    std::uint64_t upgrades = 0;  // upgrades in place before this one
    std::vector<CarriedServer> servers;
};

nlohmann::json to_json(const UpgradeState& state);
// Every field read by its type, and every server's supervisor state restored into a scratch
// supervisor, so that a state the new binary would not take is refused before the exec.
Result<UpgradeState> parse_upgrade_state(const nlohmann::json& body);

// mcpd --check-state FD: read the state in FD, check it, and print the acknowledgement on
// stdout (exit 0), or the reason it cannot be taken on stderr (exit 1).
int check_state_command(const std::string& fd_text);

// mcpd --restore-state FD: the state in FD (a number on the command line), read and checked;
// the descriptor is closed.
Result<UpgradeState> take_upgrade_state(const std::string& fd_text);

// A command line to run again after an upgrade: `args` without any --restore-state and its
// value (the exec adds the new one).
std::vector<std::string> arguments_to_keep(const std::vector<std::string>& args);

}  // namespace mcpd
