// Which tools, prompts and resources a session is shown: allow globs and exclude globs per
// kind, written in a server's table, a group's, or a group member's (docs/GROUPS.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mcpd::config {

// Names (or resource URIs) of one kind. A name is shown when it matches an `allow` glob (or
// `allow` is empty) and no `exclude` glob. Globs are fnmatch(3) patterns without flags: `*`
// matches any run of characters, '/' included, so "file:///docs/*" covers a whole tree.
struct NameFilter {
    std::vector<std::string> allow;
    std::vector<std::string> exclude;

    bool empty() const { return allow.empty() && exclude.empty(); }
    // No lists (the usual filter, asked on every call through a group): answered in line.
    bool admits(std::string_view name) const { return empty() || admits_listed(name); }
    bool operator==(const NameFilter&) const = default;

private:
    bool admits_listed(std::string_view name) const;
};

struct ItemFilters {
    NameFilter tools;
    NameFilter prompts;
    NameFilter resources;  // matched against resource URIs and template URIs

    bool empty() const { return tools.empty() && prompts.empty() && resources.empty(); }
    bool operator==(const ItemFilters&) const = default;
};

// The registry keys of a filter: "tools", "exclude_tools", and the same for prompts and
// resources, in documentation order.
inline constexpr std::string_view kFilterKeys[] = {"tools",     "exclude_tools",
                                                   "prompts",   "exclude_prompts",
                                                   "resources", "exclude_resources"};

// The list `key` (one of kFilterKeys) of `filters`, to fill in.
std::vector<std::string>& filter_list(ItemFilters& filters, std::string_view key);

}  // namespace mcpd::config
