#include "ctl/adopt_registry.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>

#include "ctl/output.h"

namespace mcpctl {

namespace {

namespace fs = std::filesystem;

// The file as the registry's comments name it: absolute.
std::string source_of(const FileWork& item) {
    std::error_code ec;
    const fs::path absolute = fs::absolute(item.target.path, ec);
    return ec ? item.target.path : absolute.lexically_normal().string();
}

}  // namespace

std::vector<RefusedServer> refused_servers(const std::vector<FileWork>& work,
                                           const RegistryState& registry) {
    std::vector<RefusedServer> refused;
    std::set<std::string> seen;
    for (const FileWork& item : work) {
        if (!item.error.empty()) continue;
        for (const ImportedServer& server : item.plan.servers) {
            if (!seen.insert(server.name).second) continue;
            std::string why;
            switch (match_server(registry, server)) {
                case RegistryMatch::same:
                    break;
                case RegistryMatch::other:
                    why = registry.path + " has a server '" + server.name +
                          "' with another command, args, env or cwd, which this entry is not "
                          "pointed at: import it under a name of its own";
                    break;
                case RegistryMatch::absent:
                    why = addition_problem(registry, server);
                    break;
            }
            if (!why.empty()) refused.push_back({server, std::move(why)});
        }
    }
    return refused;
}

void plan_additions(Adoption& adoption) {
    std::set<std::string> taken;
    adoption.additions.clear();
    for (FileWork& item : adoption.work) {
        item.added.clear();
        item.reused.clear();
        if (!item.error.empty()) continue;
        for (const ImportedServer& server : item.plan.servers) {
            if (adoption.registry.loaded.find(server.name) != nullptr) {
                item.reused.push_back(server.name);
            } else if (taken.insert(server.name).second) {
                item.added.push_back(server.name);
                adoption.additions.push_back({server, source_of(item)});
            }
        }
    }
}

mcpd::Result<std::string> group_addition(Adoption& adoption, const std::string& group) {
    const RegistryState& registry = adoption.registry;
    std::vector<std::string> members;
    for (const FileWork& item : adoption.work) {
        if (!item.error.empty()) continue;
        for (const ImportedServer& server : item.plan.servers) {
            if (server.name == group)
                return mcpd::permanent_failure("--group " + group +
                                               ": a server has that name; give the group another");
            if (std::find(members.begin(), members.end(), server.name) == members.end())
                members.push_back(server.name);
        }
    }
    if (registry.loaded.find(group) != nullptr)
        return mcpd::permanent_failure("--group " + group + ": " + registry.path +
                                       " has a server of that name; give the group another");
    const mcpd::config::GroupConfig* existing = registry.loaded.find_group(group);
    if (existing == nullptr) return members.empty() ? "" : render_group_toml(group, members);
    std::vector<std::string> listed;
    for (const mcpd::config::GroupMember& member : existing->members)
        listed.push_back(member.server);
    std::vector<std::string> missing;
    for (const std::string& name : members)
        if (std::find(listed.begin(), listed.end(), name) == listed.end()) missing.push_back(name);
    if (!missing.empty())
        adoption.notes.push_back("[groups." + group + "] in " + registry.path + " already lists " +
                                 join(listed, ", ") + "; it is left as it is: add " +
                                 join(missing, ", ") +
                                 " to its servers for the agent to reach them");
    return std::string();
}

std::string display_additions(const Adoption& adoption) {
    std::string toml;
    for (std::size_t i = 0; i < adoption.additions.size();) {
        ImportResult group;
        const std::string& source = adoption.additions[i].source;
        for (; i < adoption.additions.size() && adoption.additions[i].source == source; ++i) {
            ImportedServer server = adoption.additions[i].server;
            if (!server.env.empty())
                server.env_file = predicted_env_file(adoption.registry, server.name);
            group.servers.push_back(std::move(server));
        }
        if (!toml.empty()) toml += '\n';
        toml += render_toml(group, source);
    }
    if (!adoption.group_toml.empty()) toml += (toml.empty() ? "" : "\n") + adoption.group_toml;
    return toml;
}

}  // namespace mcpctl
