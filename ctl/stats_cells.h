// The cells of mcpctl's stats tables and top screen (ctl/stats_view.h): a figure of a stats
// result as text, "-" when it is absent or null, and the width of text on a terminal.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mcpctl {

// Reading a result: object[key], or null when `object` is no object or has no such member;
// a value when it is a number; `value` with `decimals` digits after the point.
const nlohmann::json& stats_member(const nlohmann::json& object, std::string_view key);
std::optional<double> stats_number(const nlohmann::json& value);
std::string fixed_text(double value, int decimals);

// ---- Cells

// Calls per second: "0.5", "12.5", "340".
std::string rate_text(const nlohmann::json& value);
// A latency in microseconds: "50us", "2.5ms", "250ms", "1.5s", "30s", "2m00s".
std::string duration_us_text(const nlohmann::json& value);
// A size in bytes: "900B", "1.5KiB", "9.0MiB", "120MiB".
std::string bytes_text(const nlohmann::json& value);
// A CPU share where 100 is one CPU: "1.5", "230".
std::string cpu_text(const nlohmann::json& value);

// The share of failed requests among the settled ones, from COUNTERS: failed are `errors`
// (JSON-RPC errors), `tool_errors` (tools/call results with isError), `timeouts` and
// `child_died`; settled are those plus `replies` and `cancelled` (a cancelled request settled,
// but it did not fail). nullopt when nothing settled yet.
std::optional<double> error_ratio(const nlohmann::json& counters);
// The same as "0.0%", "12%", "100%"; "-" when nothing settled yet.
std::string error_percent_text(const nlohmann::json& counters);

// ---- Width

// Columns `text` takes on a terminal: its code points.
std::size_t display_width(std::string_view text);
// `text` cut to at most `width` columns, at a character boundary.
std::string cut_to_width(std::string_view text, std::size_t width);

}  // namespace mcpctl
