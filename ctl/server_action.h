// What start, stop and restart share: they differ only in the request's command and in
// whether a failed server is an error.
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "ctl/command.h"

namespace mcpctl {

// --wait and --timeout DURATION.
inline constexpr OptionSpec kServerActionOptions[] = {
    {'w', "wait", "", "return once the servers have settled (or failed)"},
    {'t', "timeout", "DURATION", "give up waiting after DURATION (30s, 2m; default 60s)"},
};

// {"command": <the command's name>, "servers": [...], "wait": bool, "timeout_ms": int}.
bool build_server_action(const CommandLine& line, nlohmann::json& request, std::string& error);

// "demo: running (pid 123)", one line per server in the result.
std::string render_server_action(const nlohmann::json& result);

// "demo: command 'x' not found ..." for every failed server in the result.
std::vector<std::string> failed_servers(const nlohmann::json& result);

// Send, print, and return 1 when the daemon refused or, if `failed_is_error`, a server failed.
int exec_server_action(const Context& ctx, bool failed_is_error);

}  // namespace mcpctl
