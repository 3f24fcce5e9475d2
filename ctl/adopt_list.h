// mcpctl adopt --list: which known agents have files on this machine, and which servers adopt
// would move from each (and which it would leave, and why). Nothing is written.
#pragma once

#include <vector>

#include "ctl/adopt_work.h"
#include "ctl/command.h"

namespace mcpctl {

// Print `work` (every agent's files that exist, planned) by agent, the absent agents too.
int list_agents(const Context& ctx, const std::vector<FileWork>& work);

}  // namespace mcpctl
