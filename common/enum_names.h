// One way to name enum values: a table of {word, value} pairs, read both ways. The registry's
// enums (config/enum_names.h), the control protocol's and the daemon's use it, so a word is
// written once and to_string and parsing can never disagree.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace mcpd {

template <typename E>
struct EnumName {
    std::string_view name;
    E value;
};

// The word for `value`; "?" for a value the table lacks (a table that misses one is a bug the
// unit tests of each table catch).
template <typename E>
std::string_view name_of(std::span<const EnumName<E>> names, E value) {
    for (const auto& entry : names) {
        if (entry.value == value) return entry.name;
    }
    return "?";
}

// The value named `word`, if the table has it.
template <typename E>
std::optional<E> value_of(std::span<const EnumName<E>> names, std::string_view word) {
    for (const auto& entry : names) {
        if (entry.name == word) return entry.value;
    }
    return std::nullopt;
}

}  // namespace mcpd
