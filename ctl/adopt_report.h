// What mcpctl adopt says about a run: per file, and the registry's side, in words or JSON.
#pragma once

#include <nlohmann/json.hpp>

#include "ctl/adopt_work.h"
#include "ctl/command.h"

namespace mcpctl {

// The human summary of one file.
void print_file(const Context& ctx, const FileWork& item, bool dry_run);

// One file in --json.
nlohmann::json file_report(const FileWork& item);

// The registry's side in words: notes, what it had, and in a dry run what it would get.
void print_registry(const Context& ctx, const Adoption& adoption, bool dry_run);

}  // namespace mcpctl
