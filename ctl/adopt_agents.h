// The agents mcpctl adopt knows: where each keeps its MCP servers (its user file, under $HOME,
// and its project files, under the current directory) and in which format.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mcpctl {

// How a file is read and edited: JSON with comments (mcpServers, VS Code, Zed, opencode), TOML
// (Codex) or YAML (goose, Continue).
enum class AdoptFormat { json, toml, yaml };

// The agents `mcpctl adopt AGENT` knows, in the order it lists them.
std::span<const std::string_view> known_agents();

// The configuration files of `agent` with $HOME `home`, run in `cwd`: the user's first, then
// the project's, each once. `codex_home` is $CODEX_HOME (empty: ~/.codex). A project directory
// of files (Continue's .continue/mcpServers) is listed: its YAML and JSON files, sorted
// (Continue also reads Claude-style mcpServers JSON there). Fails for an
// unknown agent, naming the known ones.
mcpd::Result<std::vector<std::string>> agent_files(std::string_view agent, std::string_view home,
                                                   std::string_view cwd,
                                                   std::string_view codex_home = {});

// The format of `path`: by its name (.toml, .yaml or .yml, else JSON).
AdoptFormat format_of(std::string_view path);

}  // namespace mcpctl
