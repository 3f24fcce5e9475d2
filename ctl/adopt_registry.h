// The registry's side of mcpctl adopt: which planned servers it takes, reuses or refuses, and
// the tables it gets.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "ctl/adopt_work.h"

namespace mcpctl {

// The servers of the planned files that must stay in their agent's file, with why: the
// registry has another server of that name (it is never re-pointed), or would not load with
// it (its cwd is missing, its env cannot go to an env file, its name is a group's).
std::vector<RefusedServer> refused_servers(const std::vector<FileWork>& work,
                                           const RegistryState& registry);

// Fill each file's added and reused servers and adoption.additions (each server once, from the
// first file that has it); files with an error add nothing.
void plan_additions(Adoption& adoption);

// The [groups.NAME] table to append (empty when the registry has it), or the failure; a
// group that lists other servers is left as it is, with a note in adoption.notes.
mcpd::Result<std::string> group_addition(Adoption& adoption, const std::string& group);

// What the registry gets, as printed: env files named where they would be, no value.
std::string display_additions(const Adoption& adoption);

}  // namespace mcpctl
