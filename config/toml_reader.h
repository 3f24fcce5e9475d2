// Reading typed values out of a parsed TOML document, reporting every mismatch with the
// position of the offending key or value instead of stopping at the first.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/enum_names.h"
#include "config/registry.h"

namespace mcpd::config {

// Collects the errors found in one registry file.
class Diagnostics {
public:
    Diagnostics(std::string file, std::vector<ConfigError>& errors)
        : file_(std::move(file)), errors_(errors) {}

    const std::string& file() const { return file_; }

    // An error at the beginning of `where` in this file.
    void error(const toml::source_region& where, std::string message);

    // An error in another file (an env_file), or at a position not from the TOML tree.
    void error_in(std::string file, int line, int column, std::string message);

private:
    std::string file_;
    std::vector<ConfigError>& errors_;
};

// One key-value pair of a table.
using Entry = std::pair<const toml::key*, const toml::node*>;

// A table's entries in the order they appear in the file (toml++ keeps them sorted by name).
std::vector<Entry> entries_in_file_order(const toml::table& table);

// "string", "integer", "float", "boolean", "array", "table", "date", "time" or "date-time".
std::string_view type_name(const toml::node& node);

// `text` in double quotes, with quotes, backslashes and control characters escaped.
std::string in_quotes(std::string_view text);

// The candidate a user most likely meant by `word`: within edit distance 2 (counting a
// swap of neighbours as one edit), or a prefix either way. nullopt when none is close.
std::optional<std::string_view> suggest(std::string_view word,
                                        std::span<const std::string_view> candidates);

// "; did you mean 'x'?" for the closest candidate, or "" when none is close.
std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates);

// The readers below check one value, report what was expected if it does not fit, and
// return nullopt then. `key` names the value in messages ("command", "start_limit.burst").

std::optional<std::string> read_string(const toml::node& node, std::string_view key,
                                       Diagnostics& diag);
std::optional<bool> read_bool(const toml::node& node, std::string_view key, Diagnostics& diag);
std::optional<std::int64_t> read_integer(const toml::node& node, std::string_view key,
                                         std::int64_t min, std::int64_t max, Diagnostics& diag);

// A duration string; zero is refused unless `allow_zero`.
std::optional<Duration> read_duration(const toml::node& node, std::string_view key, bool allow_zero,
                                      Diagnostics& diag);

// An array of strings; each element of the wrong type is reported at its own position.
std::optional<std::vector<std::string>> read_string_array(const toml::node& node,
                                                          std::string_view key, Diagnostics& diag);

// A string that must be one of `names`; otherwise the error lists them all.
template <typename E>
std::optional<E> read_enum(const toml::node& node, std::string_view key,
                           std::span<const EnumName<E>> names, Diagnostics& diag) {
    const auto text = read_string(node, key, diag);
    if (!text) return std::nullopt;
    std::vector<std::string_view> allowed;
    for (const auto& entry : names) {
        if (entry.name == *text) return entry.value;
        allowed.push_back(entry.name);
    }
    std::string message =
        "invalid value " + in_quotes(*text) + " for '" + std::string(key) + "': expected one of ";
    for (std::size_t i = 0; i < allowed.size(); ++i) {
        message += (i == 0 ? "" : ", ") + in_quotes(allowed[i]);
    }
    message += did_you_mean(*text, allowed);
    diag.error(node.source(), std::move(message));
    return std::nullopt;
}

}  // namespace mcpd::config
