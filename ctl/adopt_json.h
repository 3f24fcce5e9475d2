// adopt's plan for a JSON file (comments and trailing commas allowed): every map of servers in
// it (mcpServers, servers, mcp.servers, projects.DIR.mcpServers, Zed's context_servers,
// opencode's mcp) walked, its entries settled (adopt_entries) and rewritten in place.
#pragma once

#include <string_view>

#include "common/result.h"
#include "ctl/adopt.h"

namespace mcpctl {

mcpd::Result<AdoptPlan> plan_adopt_json(std::string_view text, const AdoptOptions& options);

}  // namespace mcpctl
