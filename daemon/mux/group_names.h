// The names a group session shows its client: a member's tools and prompts as
// SERVER<separator>NAME, and which member a name or a resource URI belongs to. Pure functions,
// table-tested (tests/unit/daemon_group_names_test.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpd::group {

// Whether `name` is what model APIs accept as a tool name: ^[a-zA-Z0-9_-]{1,128}$.
bool is_model_name(std::string_view name);

// `server` + `separator` + `name`; nullopt when the result is no model name (it is then
// reported and left out rather than sent).
std::optional<std::string> prefixed(std::string_view server, std::string_view separator,
                                    std::string_view name);

// The member a prefixed name is of, and the name without the prefix. `servers` in member
// order; the longest server name that matches wins ("git" and "git__hub" both prefix
// "git__hub__x": it is git__hub's "x"). nullopt when no member's prefix matches or nothing
// is left after it. The name lies in the text given.
struct Unprefixed {
    std::size_t member = 0;
    std::string_view name;
};
std::optional<Unprefixed> unprefixed(const std::vector<std::string>& servers,
                                     std::string_view separator, std::string_view name);

// Whether `uri` is one the RFC 6570 template `uri_template` can expand to: each {expression}
// stands for any run of characters, the rest must match exactly.
bool template_matches(std::string_view uri_template, std::string_view uri);

}  // namespace mcpd::group
