#include "config/toml_reader.h"

#include <algorithm>
#include <cstdio>

namespace mcpd::config {

namespace {

// Edit distance where inserting, deleting, replacing a character or swapping two
// neighbours each count as one edit.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    const std::size_t width = b.size() + 1;
    std::vector<std::size_t> d((a.size() + 1) * width);
    const auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * width + j]; };
    for (std::size_t i = 0; i <= a.size(); ++i) at(i, 0) = i;
    for (std::size_t j = 0; j <= b.size(); ++j) at(0, j) = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
            }
        }
    }
    return at(a.size(), b.size());
}

int to_int(toml::source_index index) {
    return static_cast<int>(index);
}

}  // namespace

void Diagnostics::error(const toml::source_region& where, std::string message) {
    errors_.push_back(
        {file_, to_int(where.begin.line), to_int(where.begin.column), std::move(message)});
}

void Diagnostics::error_in(std::string file, int line, int column, std::string message) {
    errors_.push_back({std::move(file), line, column, std::move(message)});
}

std::vector<Entry> entries_in_file_order(const toml::table& table) {
    std::vector<Entry> entries;
    for (const auto& [key, node] : table) entries.emplace_back(&key, &node);
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        const auto& pa = a.first->source().begin;
        const auto& pb = b.first->source().begin;
        return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });
    return entries;
}

std::string_view type_name(const toml::node& node) {
    switch (node.type()) {
        case toml::node_type::string:
            return "string";
        case toml::node_type::integer:
            return "integer";
        case toml::node_type::floating_point:
            return "float";
        case toml::node_type::boolean:
            return "boolean";
        case toml::node_type::array:
            return "array";
        case toml::node_type::table:
            return "table";
        case toml::node_type::date:
            return "date";
        case toml::node_type::time:
            return "time";
        case toml::node_type::date_time:
            return "date-time";
        case toml::node_type::none:
            break;
    }
    return "nothing";
}

std::string in_quotes(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
            out += escaped;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::optional<std::string_view> suggest(std::string_view word,
                                        std::span<const std::string_view> candidates) {
    std::optional<std::string_view> best;
    std::size_t best_distance = 0;
    for (const std::string_view candidate : candidates) {
        const std::size_t distance = edit_distance(word, candidate);
        const bool near = distance <= 2 && distance < word.size();
        const bool prefix =
            word.size() >= 3 && (candidate.starts_with(word) || word.starts_with(candidate));
        if ((near || prefix) && (!best || distance < best_distance)) {
            best = candidate;
            best_distance = distance;
        }
    }
    return best;
}

std::string did_you_mean(std::string_view word, std::span<const std::string_view> candidates) {
    const auto match = suggest(word, candidates);
    return match ? "; did you mean '" + std::string(*match) + "'?" : std::string();
}

std::optional<std::string> read_string(const toml::node& node, std::string_view key,
                                       Diagnostics& diag) {
    if (const auto* value = node.as_string()) return value->get();
    diag.error(node.source(), "expected a string for '" + std::string(key) + "', got " +
                                  std::string(type_name(node)));
    return std::nullopt;
}

std::optional<bool> read_bool(const toml::node& node, std::string_view key, Diagnostics& diag) {
    if (const auto* value = node.as_boolean()) return value->get();
    diag.error(node.source(), "expected true or false for '" + std::string(key) + "', got " +
                                  std::string(type_name(node)));
    return std::nullopt;
}

std::optional<std::int64_t> read_integer(const toml::node& node, std::string_view key,
                                         std::int64_t min, std::int64_t max, Diagnostics& diag) {
    const auto* value = node.as_integer();
    if (!value) {
        diag.error(node.source(), "expected an integer for '" + std::string(key) + "', got " +
                                      std::string(type_name(node)));
        return std::nullopt;
    }
    const std::int64_t number = value->get();
    if (number >= min && number <= max) return number;
    std::string expected;
    if (number > max) {
        expected = "an integer of at most " + std::to_string(max);
    } else if (min == 0) {
        expected = "a non-negative integer";
    } else {
        expected = "an integer of at least " + std::to_string(min);
    }
    diag.error(node.source(), "expected " + expected + " for '" + std::string(key) + "', got " +
                                  std::to_string(number));
    return std::nullopt;
}

std::optional<Duration> read_duration(const toml::node& node, std::string_view key, bool allow_zero,
                                      Diagnostics& diag) {
    const std::string name(key);
    const auto* value = node.as_string();
    if (!value) {
        diag.error(node.source(),
                   "expected a duration string like \"500ms\", \"2s\" or \"5m\" for '" + name +
                       "', got " + std::string(type_name(node)));
        return std::nullopt;
    }
    const auto duration = parse_duration(value->get());
    if (!duration) {
        diag.error(node.source(),
                   "invalid duration " + in_quotes(value->get()) + " for '" + name +
                       "': expected one or more <integer><unit> parts with units ms, s, m or h, "
                       "like \"500ms\", \"2s\", \"5m\" or \"1m30s\"");
        return std::nullopt;
    }
    if (!allow_zero && duration->count() == 0) {
        diag.error(node.source(), "expected a duration greater than 0 for '" + name + "', got " +
                                      in_quotes(value->get()));
        return std::nullopt;
    }
    return duration;
}

std::optional<std::vector<std::string>> read_string_array(const toml::node& node,
                                                          std::string_view key, Diagnostics& diag) {
    const auto* array = node.as_array();
    if (!array) {
        diag.error(node.source(), "expected an array of strings for '" + std::string(key) +
                                      "', got " + std::string(type_name(node)));
        return std::nullopt;
    }
    std::vector<std::string> strings;
    bool ok = true;
    for (const toml::node& element : *array) {
        if (const auto* text = element.as_string()) {
            strings.push_back(text->get());
        } else {
            diag.error(element.source(), "expected a string for each element of '" +
                                             std::string(key) + "', got " +
                                             std::string(type_name(element)));
            ok = false;
        }
    }
    if (!ok) return std::nullopt;
    return strings;
}

}  // namespace mcpd::config
