// mcpctl adopt --undo: each file put back from its backup, when adopt's record vouches for the
// backup and the file is still what adopt wrote (or --force).
#pragma once

#include <string>
#include <vector>

#include "ctl/adopt_work.h"
#include "ctl/command.h"

namespace mcpctl {

// Undo adopt for `targets`; `registry` is named in the note about the servers it keeps.
// Returns the exit code.
int undo_adopt(const Context& ctx, const std::vector<Target>& targets, const std::string& registry);

}  // namespace mcpctl
