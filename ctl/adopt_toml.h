// adopt's plan for a Codex config.toml: each [mcp_servers.NAME] table (command, args, env, cwd;
// enabled = false is off) settled as any entry (adopt_entries), then edited in place: command
// and args replaced, the env table's and cwd's lines removed, every other byte kept. toml++
// reads the file and says where each value is; the edited text is read again and must equal
// the old one but for those keys, else the file is left as it is.
#pragma once

#include <string_view>

#include "common/result.h"
#include "ctl/adopt.h"

namespace mcpctl {

mcpd::Result<AdoptPlan> plan_adopt_toml(std::string_view text, const AdoptOptions& options);

}  // namespace mcpctl
