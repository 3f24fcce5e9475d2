// Registry text parsed at a made-up path, and its errors read back: shared by the config tests.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "config/registry.h"

inline mcpd::config::LoadResult parse(std::string_view text) {
    return mcpd::config::parse_registry(text, "/virtual/mcpd.toml");
}

// Every error, one per line, for failure messages.
inline std::string describe(const mcpd::config::LoadResult& result) {
    std::string text;
    for (const mcpd::config::ConfigError& error : result.errors) text += error.to_string() + "\n";
    return text;
}

// The single error `result` must hold (a copy: `result` is often a temporary).
inline mcpd::config::ConfigError only_error(const mcpd::config::LoadResult& result) {
    INFO(describe(result));
    REQUIRE(result.errors.size() == 1);
    CHECK_FALSE(result.registry.has_value());
    return result.errors.front();
}

inline bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}
