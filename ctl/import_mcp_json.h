// mcpctl import: turning an agent's MCP server configuration (JSON) into mcpd registry TOML.
//
// Pure functions only: reading files, writing the registry and talking to the daemon are in
// cmd_import.cpp. Accepted shapes: {"mcpServers": {...}} (Claude Code, Claude Desktop,
// Cursor), {"servers": {...}} (VS Code mcp.json) and {"mcp": {"servers": {...}}} (VS Code
// settings.json).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "ctl/server_approval.h"

namespace mcpctl {

// Which JSON shape the servers came from; the connect hint is written in the same shape.
enum class ImportShape {
    mcp_servers,
    vscode_servers,
    vscode_settings,
    zed,        // context_servers
    opencode,   // mcp, {"type": "local", "command": [...]}
    codex,      // TOML [mcp_servers.NAME]
    goose,      // YAML extensions
    continue_,  // YAML mcpServers list
};

struct ImportedServer {
    std::string name;           // valid mcpd server name ([A-Za-z0-9_.-]+)
    std::string original_name;  // the key in the agent's file
    std::string command;
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;  // in key order
    std::string cwd;                                       // empty when absent
    // Where the registry keeps `env` (an env file of mode 0600); empty: render it inline.
    std::string env_file = {};
};

struct SkippedServer {
    std::string name;    // the key in the agent's file
    std::string reason;  // a sentence fragment: "it is a remote server (url ...)"
};

struct ImportResult {
    ImportShape shape = ImportShape::mcp_servers;
    std::vector<ImportedServer> servers;  // in the file's key order
    std::vector<SkippedServer> skipped;
    std::vector<std::string> renamed;  // "renamed 'a b' to 'a-b' ..." notes
};

// Parse the JSON text (comments allowed) and convert every entry. An entry the agent has not
// turned on (`approval`, the file's own lists, "disabled": true) is skipped. Fails when the
// text is not JSON or holds no server map.
mcpd::Result<ImportResult> convert_mcp_json(std::string_view text,
                                            const ServerApproval& approval = {});

// Replace every character outside [A-Za-z0-9_.-] with '-'.
std::string sanitize_server_name(std::string_view name);

// A TOML basic string, quotes included.
std::string toml_string(std::string_view value);
// A TOML key: bare when it only holds [A-Za-z0-9_-], else a basic string.
std::string toml_key(std::string_view key);

// The package a well-known roots- or directory-scoped server runs as (server-filesystem,
// server-git), found in its command or arguments; empty for any other. render_toml gives
// these sharing = "project", so that each project gets its own process.
std::string_view project_scoped_package(const ImportedServer& server);

// One commented [servers.NAME] table per server, lazy (no process until a request needs one);
// `source` names the file in the comments. A server's env is its env_file when it has one, else
// an inline table.
std::string render_toml(const ImportResult& result, std::string_view source);

// The agent-side configuration pointing at mcpd: the same shape, "mcpctl connect NAME"
// (import_formats: in the agent's own format).
std::string connect_hint(const ImportResult& result);

// Whether registry text already has a [servers.NAME] or [servers."NAME"] table.
bool registry_has_server(std::string_view registry_text, std::string_view name);

// mcpd's default registry path: /etc/mcpd/mcpd.toml for root, else
// $XDG_CONFIG_HOME/mcpd/mcpd.toml or ~/.config/mcpd/mcpd.toml.
std::string default_registry_path();

}  // namespace mcpctl
