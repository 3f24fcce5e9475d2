// A server's sandbox for its next child: the plan for this machine (daemon/sandbox/), its
// placeholders filled in for the user the child runs as, the directories {cache} and {state}
// made, and the start refused when `strict` asks for a rule the kernel cannot enforce.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "config/registry.h"
#include "daemon/sandbox/sandbox_child.h"

namespace mcpd {

struct PreparedSandbox {
    sandbox::Plan plan;
    std::optional<sandbox::ChildSandbox> child;  // set when the plan is active
    // TMPDIR for the child: {cache}/tmp under a preset, so temporary files stay inside its
    // box instead of the shared /tmp. Empty: its environment's.
    std::string tmpdir;
    // The cgroup leaf the child joins, where mcpd has a delegated cgroup (every server gets
    // one then, for its accounting); empty: none.
    std::string cgroup_leaf;
};

// For a child of `server` that executes `command`. A failure is permanent: `strict` and a rule
// this machine cannot enforce, or a directory ({cache}, {state}) that cannot be made or is not
// mcpd's own and private. Without a sandbox, only the cgroup leaf (where there is a delegated
// cgroup).
Result<PreparedSandbox> prepare_sandbox(const config::ServerConfig& server,
                                        const std::string& command);

// The start log's lines for `plan`: how its rules hold, and a warning for each that cannot.
void log_sandbox(const std::string& server, const sandbox::Plan& plan);

// What --check-config says of `server`'s sandbox on this machine: nothing for a server
// without one, else how each rule is enforced and which cannot be.
std::vector<std::string> sandbox_report(const config::ServerConfig& server);

// status's "sandbox" of `server`: its preset, network and limits, and, once a child started
// with `plan`, how each rule was enforced and which could not be. Null without a sandbox.
nlohmann::json sandbox_json(const config::ServerConfig& server,
                            const std::optional<sandbox::Plan>& plan);

// {cache} and {state} of `server` for the user its child runs as.
sandbox::Placeholders sandbox_placeholders(const config::ServerConfig& server);

}  // namespace mcpd
