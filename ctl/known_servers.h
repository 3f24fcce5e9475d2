// What mcpctl knows of well-known MCP servers by their package or program name, for the
// registry entries import and adopt write: which work on a project, and the sandbox that fits.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mcpctl {

// The first of `names` that the command or one of its arguments runs: the name itself, a
// path ending in it (…/bin/mcp-server-git) or a pinned version (name@1.2.3); empty if none.
std::string_view known_package(const std::string& command, const std::vector<std::string>& args,
                               std::span<const std::string_view> names);

// The well-known server that works on the agent's project (its roots or its directory), which
// pooled across projects would show one project's files to another; empty if none.
std::string_view project_scoped(const std::string& command, const std::vector<std::string>& args);

struct SandboxFit {
    std::string_view preset;  // "project"; empty: mcpctl knows no fit
    std::string_view why;     // a comment line for the registry
};

// The sandbox preset (docs/SANDBOX.md) that fits a well-known server.
SandboxFit sandbox_fit(const std::string& command, const std::vector<std::string>& args);

}  // namespace mcpctl
