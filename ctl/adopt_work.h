// What one run of mcpctl adopt works on, shared by its parts: cmd_adopt (the run),
// adopt_registry (what the registry gets), adopt_report (what is said) and adopt_undo.
#pragma once

#include <string>
#include <vector>

#include "ctl/adopt.h"
#include "ctl/registry_append.h"

namespace mcpctl {

// One file to adopt; `agent` is empty for a FILE argument.
struct Target {
    std::string path;
    std::string agent;
};

// What adopt does to one file.
struct FileWork {
    Target target;
    AdoptPlan plan;
    std::string error;                // set when the file cannot be adopted
    std::string link_target;          // the file a symbolic link `path` leads to, else empty
    bool backup_exists = false;       // adopt's own backup is there (kept from the first run)
    std::vector<std::string> added;   // servers this file adds to the registry
    std::vector<std::string> reused;  // servers the registry already had, the same
};

// Everything one run of adopt found out before writing anything.
struct Adoption {
    std::vector<FileWork> work;
    std::vector<std::string> notes;
    RegistryState registry;
    std::vector<RegistryAddition> additions;  // the servers the registry gets
    std::string group_toml;                   // its [groups.NAME] table, if any
    std::string display_toml;                 // all it gets, as shown (no env value in it)
};

// "PATH (agent)" or "PATH".
std::string describe(const Target& target);

}  // namespace mcpctl
