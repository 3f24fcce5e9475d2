// Reading the [groups.<name>] tables of the registry: one MCP session over several servers.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <span>
#include <string_view>

#include "config/registry.h"
#include "config/toml_reader.h"

namespace mcpd::config {

// Validate the group declared by `key` = `node`: its own keys and its member tables. Whether
// its members are servers of the registry is checked by check_groups, once every table is read.
std::optional<GroupConfig> read_group(const toml::key& key, const toml::node& node,
                                      Diagnostics& diag);

// Cross-table rules, each reported at the offending key: a member that names no server, a
// group named like a server (`mcpctl connect NAME` must mean one thing). `groups_node` is the
// [groups] table, `servers_node` the [servers] table (either may be absent).
void check_groups(const Registry& registry, const toml::node* groups_node,
                  const toml::node* servers_node, Diagnostics& diag);

// One filter key (tools, exclude_tools, ...) of a server, a group or a member: its globs,
// strings and none empty, into `filters`.
void read_filter_key(const toml::node& value, std::string_view key, ItemFilters& filters,
                     Diagnostics& diag);

// Whether `separator` may join a server's name and an item's: 1 to 8 of [A-Za-z0-9_-], so
// that the joined name can still match what model APIs accept (^[a-zA-Z0-9_-]{1,128}$).
bool is_separator(std::string_view separator);

// Every key a group table takes besides its member tables, in documentation order.
std::span<const std::string_view> group_keys();

}  // namespace mcpd::config
