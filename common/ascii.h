// ASCII-only text helpers for protocol tokens (HTTP header names, schemes, hosts, JSON
// whitespace): never locale-dependent, unlike <cctype>, so a byte above 127 is left as it is.
#pragma once

#include <string>
#include <string_view>

namespace mcpd {

// 'A'..'Z' lowered; every other byte as it is.
constexpr char ascii_lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
}

std::string ascii_lowercase(std::string_view text);

// Equal when ASCII letters are compared without their case (HTTP header names, "Bearer").
bool ascii_equal_ignoring_case(std::string_view a, std::string_view b);

// The four bytes JSON allows between tokens.
constexpr bool is_json_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace mcpd
