// The Prometheus text exposition format (version 0.0.4) of mcpd's traffic figures: what
// `mcpctl metrics` prints and `GET /metrics` serves, the metrics of docs/STATS.md's table.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace mcpd {

// The Content-Type of metrics_text's output over HTTP.
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// The metrics of a `stats` result asked with "tools": true (docs/STATS.md). Each family is
// written whole (HELP, TYPE, then its samples: what node_exporter's textfile collector
// requires), families in the table's order, servers in the result's order and names in their
// server's. A family without samples is left out; so is a sample whose figure is null or
// missing (a server without a process has no CPU or memory). Pure: the same result gives the
// same text.
std::string metrics_text(const nlohmann::json& stats);

// `value` escaped for a label value between double quotes: backslash, double quote and newline
// escaped, bytes that are not UTF-8 replaced by U+FFFD.
std::string escape_label_value(std::string_view value);

// `count` units of 10^-decimals as a decimal number without trailing zeros: (512000, 6) is
// "0.512", (2500000, 6) "2.5", (0, 3) "0".
std::string decimal_text(std::uint64_t count, unsigned decimals);

}  // namespace mcpd
