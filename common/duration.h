// Durations as the registry writes them: "500ms", "2s", "5m", "1h30m".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace mcpd {

using Duration = std::chrono::milliseconds;

// Parse a duration string made of one or more <integer><unit> parts, unit one of
// ms, s, m, h. Returns nullopt on anything else (empty, no unit, negative, overflow).
std::optional<Duration> parse_duration(std::string_view text);

// Format a duration the way parse_duration reads it back, shortest exact form
// ("1500ms", "2s", "1m30s"); zero is "0s".
std::string format_duration(Duration d);

// Human form for tables, rounded: "850ms", "12s", "5m03s", "2h14m", "3d04h".
std::string format_age(Duration d);

}  // namespace mcpd
