#include <algorithm>

#include "ctl/command.h"
#include "ctl/output.h"

namespace mcpctl {

// command_list.inc is written by CMake: one MCPCTL_COMMAND(name), sorted by name, per
// `extern const Command cmd_<name>` defined in a ctl/cmd_*.cpp file.
#define MCPCTL_COMMAND(name) extern const Command cmd_##name;
#include "ctl/command_list.inc"
#undef MCPCTL_COMMAND

namespace {

const Command* const kCommands[] = {
#define MCPCTL_COMMAND(name) &cmd_##name,
#include "ctl/command_list.inc"
#undef MCPCTL_COMMAND
};

}  // namespace

std::span<const Command* const> all_commands() {
    return kCommands;
}

mcpd::Result<const Command*> resolve_command(std::span<const Command* const> table,
                                             std::string_view name) {
    std::vector<const Command*> matches;
    for (const Command* command : table) {
        if (command->name == name) return command;
        if (!name.empty() && command->name.starts_with(name)) matches.push_back(command);
    }
    if (matches.size() == 1) return matches.front();
    if (matches.empty())
        return mcpd::permanent_failure("unknown command '" + std::string(name) + "'");
    std::vector<std::string> names;
    for (const Command* command : matches) names.emplace_back(command->name);
    std::sort(names.begin(), names.end());
    return mcpd::permanent_failure("ambiguous command '" + std::string(name) +
                                   "', could be: " + join(names, ", "));
}

mcpd::Result<const Command*> find_command(std::string_view name) {
    return resolve_command(all_commands(), name);
}

}  // namespace mcpctl
