// mcpctl adopt: which files an agent keeps its MCP servers in, and how one such file is
// rewritten so that its stdio servers run through mcpd (`mcpctl connect NAME`).
//
// Pure functions only: reading and writing the files, the registry and the daemon are in
// cmd_adopt.cpp and adopt_files.cpp. The rewrite edits the text in place (jsonc_edit, and the
// TOML and YAML planners' own edits), so that comments, key order and every other key stay as
// the agent or the user wrote them.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "ctl/adopt_agents.h"
#include "ctl/import_mcp_json.h"
#include "ctl/server_approval.h"

namespace mcpctl {

// An entry of the file that stays as it is, and why.
struct LeftEntry {
    std::string where;   // "linear", or "linear (project /home/me/app)"
    std::string reason;  // "remote server (url https://...)"
};

// A server that is not to be adopted, and why (the registry has another of its name, or
// would not load with it).
struct RefusedServer {
    ImportedServer server;
    std::string reason;
};

struct AdoptOptions {
    std::string group;  // empty: each server gets its own entry; else one entry for all
    // Servers adopted from the files before this one: an entry of the same name but another
    // definition is left as it is rather than silently run as the other one.
    std::vector<ImportedServer> adopted_before;
    // What the agent has turned on beyond the file's own switches (a .mcp.json's approvals).
    ServerApproval approval = {};
    // Entries with the same name and definition are left as they are, with the reason.
    std::vector<RefusedServer> refused = {};
    AdoptFormat format = AdoptFormat::json;
};

struct AdoptPlan {
    bool has_servers = false;                      // the file holds a map of MCP servers at all
    std::vector<ImportedServer> servers;           // what the registry must have, one per name
    std::vector<std::string> rewritten;            // "git: runs 'mcpctl connect git'"
    std::vector<LeftEntry> left;                   // remote servers and entries mcpd cannot run
    std::vector<std::string> connected;            // entries that already run `mcpctl connect`
    std::vector<std::string> notes;                // renamed servers
    std::string text;                              // the new text; the old one when nothing changes
    ImportShape shape = ImportShape::mcp_servers;  // of its (first) map of servers
    bool changed = false;
};

// Plan the rewrite of one agent file in `options.format`: its stdio servers are imported as `mcpctl
// import` does (convert_mcp_json) and their entries run `mcpctl connect NAME` (command and args
// replaced, env and cwd removed, every other key kept), or with a group they make way for one entry
// running `mcpctl connect GROUP`. Server maps: mcpServers, servers (VS Code), mcp.servers (VS
// Code settings), projects.DIR.mcpServers (Claude Code), context_servers (Zed), mcp
// (opencode), [mcp_servers.NAME] (Codex, adopt_toml), extensions (goose) and a mcpServers list
// (Continue, adopt_yaml). Servers the agent has not turned on (server_approval.h) and
// `options.refused` are left as they are. Fails when the text cannot be read (naming the
// line), cannot be edited in place (saying why), or the group's name cannot be used.
mcpd::Result<AdoptPlan> plan_adopt(std::string_view text, const AdoptOptions& options);

// The registry table of a group.
std::string render_group_toml(std::string_view group, std::span<const std::string> servers);

// The servers the registry's [groups.NAME] lists; nullopt when it has no such group. Fails
// when the registry is not TOML.
mcpd::Result<std::optional<std::vector<std::string>>> registry_group_servers(
    std::string_view registry_text, std::string_view group);

// The same servers with every env value replaced by "…", for printing: values are often keys.
ImportResult without_env_values(ImportResult result);

}  // namespace mcpctl
