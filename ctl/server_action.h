// What start, stop and restart share (their entries are in cmd_start_stop_restart.cpp): they
// differ only in the request's command and in whether a failed server is an error.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "common/control_protocol.h"
#include "ctl/command.h"

namespace mcpctl {

// The help texts of --timeout say 60s.
static_assert(mcpd::control::kDefaultWait == std::chrono::seconds(60));

// --wait and --timeout DURATION, for start, stop, restart and shutdown.
inline constexpr OptionSpec kServerActionOptions[] = {
    {'w', "wait", "", "return once the servers have settled (or failed)"},
    {'t', "timeout", "DURATION", "give up waiting after DURATION (30s, 2m; default 60s)"},
};

// {"command": <the command's name>, "servers": [...], "wait": bool, "timeout_ms": int}.
mcpd::Result<nlohmann::json> build_server_action(const CommandLine& line);

// "demo: running (pid 123)", one line per server in the result.
std::string render_server_action(const nlohmann::json& result);

// "demo: command 'x' not found ..." for every failed server in the result.
std::vector<std::string> failed_servers(const nlohmann::json& result);

// Send, print, and return 1 when the daemon refused or, if `failed_is_error`, a server failed.
int exec_server_action(const Context& ctx, bool failed_is_error);
// The same for a request that waits as `wait` says (warm always waits).
int exec_server_action(const Context& ctx, bool failed_is_error, const WaitOption& wait);

}  // namespace mcpctl
