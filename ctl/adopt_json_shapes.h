// The JSON shapes of an agent's server entry, and the in-place edits that make one run
// `mcpctl connect NAME`:
//   mcp_servers  {"command": "npx", "args": [...], "env": {...}}: Claude, Cursor, VS Code,
//                Gemini, Windsurf, Kiro, LM Studio, and Zed's context_servers
//   zed_legacy   Zed's older {"command": {"path": "npx", "args": [...], "env": {...}}}
//   opencode     {"type": "local", "command": ["npx", "-y", "pkg"], "environment": {...}}
// Pure functions over text (jsonc_edit); adopt.cpp walks the maps.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "ctl/jsonc_edit.h"

namespace mcpctl {

enum class JsonShape { mcp_servers, zed, opencode };

// The entry `value` of a map of `shape` in the mcpServers shape, for classify_entry; `left` is
// set instead when the entry is not a server mcpd could ever run (a Zed extension's server).
nlohmann::json normalized_entry(JsonShape shape, const nlohmann::json& value, std::string& left);

// The edits that make the entry `member` (of a map of `shape`) run `mcpctl connect NAME`: its
// command and args replaced, its environment and cwd removed, every other key kept.
mcpd::Result<mcpd::Done> rewrite_json_entry(std::string_view text, const JsonMember& member,
                                            JsonShape shape, std::string_view name,
                                            std::vector<TextEdit>& edits);

// An entry's value running `mcpctl connect NAME` in `shape`, laid out like `like` (the entry
// it replaces): on one line, or one key per line indented one step more than its key.
std::string connect_json_entry(std::string_view text, const JsonMember& like, JsonShape shape,
                               std::string_view name, bool typed);

}  // namespace mcpctl
