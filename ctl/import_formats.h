// mcpctl import of any agent file adopt knows: JSON mcpServers shapes through convert_mcp_json,
// and Zed, opencode, Codex (TOML), goose and Continue (YAML) through adopt's own reading of
// them (plan_adopt), so that both commands take the same servers. And the agent-side entry
// that reaches the servers through mcpd, in the agent's own format.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "ctl/import_mcp_json.h"
#include "ctl/server_approval.h"

namespace mcpctl {

// The servers of the agent file `path` holding `text`. Fails when it cannot be read or holds
// no servers.
mcpd::Result<ImportResult> convert_agent_file(std::string_view path, std::string_view text,
                                              const ServerApproval& approval = {});

// connect_hint in the shape the servers came from: JSON, TOML or YAML.
std::string agent_connect_hint(const ImportResult& result);

}  // namespace mcpctl
