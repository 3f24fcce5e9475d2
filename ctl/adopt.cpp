#include "ctl/adopt.h"

#include <toml++/toml.h>

#include "ctl/adopt_json.h"
#include "ctl/adopt_toml.h"
#include "ctl/adopt_yaml.h"

namespace mcpctl {

mcpd::Result<AdoptPlan> plan_adopt(std::string_view text, const AdoptOptions& options) {
    if (!options.group.empty() && sanitize_server_name(options.group) != options.group)
        return mcpd::permanent_failure("--group " + options.group +
                                       ": a group's name may only hold letters, digits, '_', '.' "
                                       "and '-'");
    switch (options.format) {
        case AdoptFormat::toml:
            return plan_adopt_toml(text, options);
        case AdoptFormat::yaml:
            return plan_adopt_yaml(text, options);
        case AdoptFormat::json:
            break;
    }
    return plan_adopt_json(text, options);
}

std::string render_group_toml(std::string_view group, std::span<const std::string> servers) {
    std::string text = "# Adopted by mcpctl: one session over these servers (mcpctl connect " +
                       std::string(group) + ")\n[groups." + toml_key(group) + "]\nservers = [";
    for (std::size_t i = 0; i < servers.size(); ++i)
        text += (i ? ", " : "") + toml_string(servers[i]);
    return text + "]\n";
}

mcpd::Result<std::optional<std::vector<std::string>>> registry_group_servers(
    std::string_view registry_text, std::string_view group) {
    toml::table table;
    try {
        table = toml::parse(registry_text);
    } catch (const toml::parse_error& e) {
        return mcpd::permanent_failure("line " + std::to_string(e.source().begin.line) + ": " +
                                       std::string(e.description()));
    }
    const toml::table* groups = table["groups"].as_table();
    const toml::table* found = groups ? (*groups)[group].as_table() : nullptr;
    if (found == nullptr) return std::optional<std::vector<std::string>>{};
    std::vector<std::string> servers;
    if (const toml::array* list = (*found)["servers"].as_array())
        for (const toml::node& item : *list)
            if (const auto name = item.value<std::string>()) servers.push_back(*name);
    return std::optional<std::vector<std::string>>{std::move(servers)};
}

ImportResult without_env_values(ImportResult result) {
    for (ImportedServer& server : result.servers)
        for (auto& variable : server.env) variable.second = "(hidden)";
    return result;
}

}  // namespace mcpctl
