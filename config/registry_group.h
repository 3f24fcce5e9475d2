// Reading the [groups.<name>] tables of the registry: one MCP session over several servers.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <span>
#include <string>
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

// Two members of one group whose shown names could be the same: `shorter` + separator begins
// `longer` + separator. With "__", members "d" and "d__x" both show "d__x__t" (d's "x__t",
// d__x's "t"), and so do "d" and "d_" ("d___t"). Tool and prompt names are the servers' own
// choice, so any such pair can collide, and no other pair ever can: refusing these keeps every
// name of a group session unique by construction. Indices into `servers`; nullopt when none.
struct PrefixClash {
    std::size_t shorter = 0;
    std::size_t longer = 0;
};
std::optional<PrefixClash> prefix_clash(std::span<const std::string> servers,
                                        std::string_view separator);

// `clash` as a sentence without its end: both members and a name they could both show.
std::string prefix_clash_example(std::span<const std::string> servers, std::string_view separator,
                                 const PrefixClash& clash);

// A short separator other than `separator` under which no two of `servers` clash; nullopt when
// none of the few tried does (renaming a server is then the way).
std::optional<std::string> clash_free_separator(std::span<const std::string> servers,
                                                std::string_view separator);

// Every key a group table takes besides its member tables, in documentation order.
std::span<const std::string_view> group_keys();

}  // namespace mcpd::config
