// What adopt decides about one server entry, whatever the file's format: whether mcpd can run
// it (a local stdio server), whether the agent turned it on, and whether its name is free. The
// format planners (adopt, adopt_toml, adopt_yaml) bring each entry in the mcpServers shape.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ctl/adopt.h"

namespace mcpctl {

enum class EntryKind { stdio, connected, left };

struct Entry {
    EntryKind kind = EntryKind::left;
    std::string reason;  // for left
    ImportedServer server;
    std::vector<std::string> notes;
};

// An entry in the mcpServers shape ({"command", "args", "env", "cwd", "type", "url", ...}) as
// import would take it: a stdio server, one already running `mcpctl connect`, or left, why.
Entry classify_entry(const std::string& key, const nlohmann::json& entry);

bool same_definition(const ImportedServer& a, const ImportedServer& b);

// Settle a classified `entry` (its key `key`, named `where` in the summary) into `plan`: a stdio
// entry that `approvals` or `options.refused` turn off, or whose name another definition took,
// is left, with the reason. True when it is adopted (its server is in plan.servers then).
bool admit_entry(Entry& entry, const std::string& key, const std::string& where,
                 const std::vector<const ServerApproval*>& approvals, const AdoptOptions& options,
                 AdoptPlan& plan);

}  // namespace mcpctl
