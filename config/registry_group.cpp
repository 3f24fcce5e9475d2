#include "config/registry_group.h"

#include <algorithm>

#include "config/registry_server.h"

namespace mcpd::config {

namespace {

constexpr std::string_view kGroupKeys[] = {"servers",         "separator",     "tools",
                                           "exclude_tools",   "prompts",       "exclude_prompts",
                                           "resources",       "exclude_resources"};

bool is_filter_key(std::string_view key) {
    return std::find(std::begin(kFilterKeys), std::end(kFilterKeys), key) != std::end(kFilterKeys);
}


// [groups.G.SERVER]: the filters of one member.
void read_member_table(const GroupConfig& group, const toml::key& key, const toml::node& node,
                       GroupMember& member, Diagnostics& diag) {
    const auto* table = node.as_table();
    for (const auto& [field, value] : entries_in_file_order(*table)) {
        const std::string_view name = field->str();
        if (is_filter_key(name)) {
            read_filter_key(*value, name, member.filters, diag);
        } else {
            diag.error(field->source(), "unknown key '" + std::string(name) + "' in member '" +
                                            std::string(key.str()) + "' of group '" + group.name +
                                            "'; a member table takes only the filters " +
                                            "tools, exclude_tools, prompts, exclude_prompts, "
                                            "resources and exclude_resources" +
                                            did_you_mean(name, kFilterKeys));
        }
    }
}

void read_servers_list(const toml::node& value, GroupConfig& group, Diagnostics& diag) {
    const auto names = read_string_array(value, "servers", diag);
    if (!names) return;
    const auto* array = value.as_array();
    for (std::size_t i = 0; i < names->size(); ++i) {
        const std::string& name = (*names)[i];
        const toml::source_region& where = (*array)[i].source();
        const bool repeated = std::any_of(group.members.begin(), group.members.end(),
                                          [&](const GroupMember& m) { return m.server == name; });
        if (repeated) {
            diag.error(where, "group '" + group.name + "' lists server '" + name + "' twice");
            continue;
        }
        group.members.push_back(GroupMember{name, {}});
    }
    if (names->empty()) {
        diag.error(value.source(), "group '" + group.name + "' has no servers: list at least one, "
                                   "such as servers = [\"github\", \"memory\"]");
    }
}

// Members whose shown names could collide (prefix_clash), reported at the second one's element.
void check_prefixes(const GroupConfig& group, const toml::node& node, Diagnostics& diag) {
    std::vector<std::string> servers;
    for (const GroupMember& member : group.members) servers.push_back(member.server);
    const auto clash = prefix_clash(servers, group.separator);
    if (!clash) return;
    const toml::node* list = node.as_table()->get("servers");
    const toml::array* array = list != nullptr ? list->as_array() : nullptr;
    const std::string& later = servers[std::max(clash->shorter, clash->longer)];
    const toml::source_region* where = list != nullptr ? &list->source() : &node.source();
    for (std::size_t i = 0; array != nullptr && i < array->size(); ++i) {
        const auto* name = (*array)[i].as_string();
        if (name != nullptr && name->get() == later) where = &(*array)[i].source();
    }
    std::string message = "group '" + group.name +
                          "': " + prefix_clash_example(servers, group.separator, *clash) +
                          "; rename one of the two servers";
    if (const auto other = clash_free_separator(servers, group.separator))
        message += ", or set separator = \"" + *other + "\" in [groups." + group.name + "]";
    diag.error(*where, std::move(message));
}

}  // namespace

void read_filter_key(const toml::node& value, std::string_view key, ItemFilters& filters,
                     Diagnostics& diag) {
    auto globs = read_string_array(value, key, diag);
    if (!globs) return;
    for (const std::string& glob : *globs) {
        if (glob.empty()) {
            // Built piece by piece: gcc 12 at -O3 takes `"'" + std::string(...)` for an
            // overlapping copy (a false -Wrestrict).
            std::string message = "'";
            message += key;
            message += "' holds an empty pattern; write a name or a glob such as \"get_*\"";
            diag.error(value.source(), std::move(message));
            return;
        }
    }
    filter_list(filters, key) = std::move(*globs);
}

bool is_separator(std::string_view separator) {
    if (separator.empty() || separator.size() > 8) return false;
    return std::all_of(separator.begin(), separator.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    });
}

std::optional<PrefixClash> prefix_clash(std::span<const std::string> servers,
                                        std::string_view separator) {
    const auto joined = [&](std::size_t i) { return servers[i] + std::string(separator); };
    for (std::size_t i = 0; i < servers.size(); ++i) {
        for (std::size_t j = i + 1; j < servers.size(); ++j) {
            const std::string a = joined(i);
            const std::string b = joined(j);
            if (b.starts_with(a)) return PrefixClash{i, j};
            if (a.starts_with(b)) return PrefixClash{j, i};
        }
    }
    return std::nullopt;
}

std::string prefix_clash_example(std::span<const std::string> servers, std::string_view separator,
                                 const PrefixClash& clash) {
    const std::string& shorter = servers[clash.shorter];
    const std::string& longer = servers[clash.longer];
    const std::string shown = longer + std::string(separator) + "t";
    const std::string as_shorter = shown.substr(shorter.size() + separator.size());
    return "servers '" + shorter + "' and '" + longer + "' could show two tools by one name: '" +
           shown + "' would be both " + longer + "'s tool 't' and " + shorter + "'s tool '" +
           as_shorter + "'";
}

std::optional<std::string> clash_free_separator(std::span<const std::string> servers,
                                                std::string_view separator) {
    constexpr std::string_view kCandidates[] = {"__", "--", "-", "_", "___", "---", "-_", "_-"};
    for (const std::string_view candidate : kCandidates) {
        if (candidate != separator && !prefix_clash(servers, candidate))
            return std::string(candidate);
    }
    return std::nullopt;
}

std::span<const std::string_view> group_keys() {
    return kGroupKeys;
}

std::optional<GroupConfig> read_group(const toml::key& key, const toml::node& node,
                                      Diagnostics& diag) {
    GroupConfig group;
    group.name = std::string(key.str());
    if (!is_server_name(group.name)) {
        diag.error(key.source(), "invalid group name " + in_quotes(group.name) +
                                     ": use only letters, digits, '_', '.' and '-'");
    }
    const auto* table = node.as_table();
    if (!table) {
        diag.error(node.source(), "expected a table for 'groups." + group.name + "', got " +
                                      std::string(type_name(node)));
        return std::nullopt;
    }
    if (const toml::node* servers = table->get("servers")) {
        read_servers_list(*servers, group, diag);
    } else {
        diag.error(node.source(), "group '" + group.name + "' has no 'servers': add servers = "
                                  "[\"<server>\", ...]");
    }
    for (const auto& [field, value] : entries_in_file_order(*table)) {
        const std::string_view name = field->str();
        if (name == "servers") continue;
        if (name == "separator") {
            auto separator = read_string(*value, name, diag);
            if (separator && !is_separator(*separator)) {
                diag.error(value->source(),
                           "'separator' must be 1 to 8 of letters, digits, '_' and '-' (tool "
                           "names must match ^[a-zA-Z0-9_-]{1,128}$), got " +
                               in_quotes(*separator));
            } else if (separator) {
                group.separator = std::move(*separator);
            }
        } else if (is_filter_key(name)) {
            read_filter_key(*value, name, group.filters, diag);
        } else if (value->is_table()) {
            const auto member = std::find_if(group.members.begin(), group.members.end(),
                                             [&](const GroupMember& m) { return m.server == name; });
            if (member == group.members.end()) {
                diag.error(field->source(), "[groups." + group.name + "." + std::string(name) +
                                                "] names no member of the group: add '" +
                                                std::string(name) + "' to its servers, or remove "
                                                "the table");
                continue;
            }
            read_member_table(group, *field, *value, *member, diag);
        } else {
            diag.error(field->source(),
                       "unknown key '" + std::string(name) + "' in group '" + group.name +
                           "'; a group takes servers, separator, the filters (tools, "
                           "exclude_tools, prompts, exclude_prompts, resources, "
                           "exclude_resources) and a [groups." + group.name +
                           ".<server>] table of filters per member" +
                           did_you_mean(name, kGroupKeys));
        }
    }
    check_prefixes(group, node, diag);
    return group;
}

void check_groups(const Registry& registry, const toml::node* groups_node,
                  const toml::node* servers_node, Diagnostics& diag) {
    const auto* groups = groups_node != nullptr ? groups_node->as_table() : nullptr;
    if (groups == nullptr) return;
    const auto* servers = servers_node != nullptr ? servers_node->as_table() : nullptr;
    for (const GroupConfig& group : registry.groups) {
        const auto* table = groups->get(group.name);
        if (table == nullptr || !table->is_table()) continue;
        if (servers != nullptr) {
            if (const auto* server = servers->get(group.name)) {
                const auto& at = server->source().begin;
                diag.error(table->source(), "group '" + group.name + "' has the name of the server "
                                            "declared at line " + std::to_string(at.line) +
                                            ": rename one, since 'mcpctl connect " + group.name +
                                            "' must name one of them");
            }
        }
        const auto* list = table->as_table()->get("servers");
        const auto* array = list != nullptr ? list->as_array() : nullptr;
        if (array == nullptr) continue;
        for (const toml::node& element : *array) {
            const auto* name = element.as_string();
            if (name == nullptr || registry.find(name->get()) != nullptr) continue;
            const bool is_group = registry.find_group(name->get()) != nullptr;
            diag.error(element.source(),
                       "group '" + group.name + "' lists " + in_quotes(name->get()) +
                           (is_group ? ", which is a group: a group's members are servers"
                                     : ", which is no server of the registry"));
        }
    }
}

}  // namespace mcpd::config
