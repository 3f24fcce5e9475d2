// The cells of mcpctl's stats tables and top screen: figures as text, and the width of text
// on a terminal (stats_cells.h).
#include "ctl/stats_cells.h"

#include <algorithm>
#include <cstdio>

#include "common/duration.h"

namespace mcpctl {

using nlohmann::json;

namespace {

const json& null_json() {
    static const json null;
    return null;
}

}  // namespace

const json& stats_member(const json& object, std::string_view key) {
    if (!object.is_object()) return null_json();
    const auto it = object.find(key);
    return it == object.end() ? null_json() : *it;
}

std::optional<double> stats_number(const json& value) {
    if (!value.is_number()) return std::nullopt;
    return value.get<double>();
}

std::string fixed_text(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// ---- Cells

std::string rate_text(const json& value) {
    const std::optional<double> rate = stats_number(value);
    if (!rate) return "-";
    return fixed_text(*rate, *rate < 100 ? 1 : 0);
}

std::string duration_us_text(const json& value) {
    const std::optional<double> us = stats_number(value);
    if (!us || *us < 0) return "-";
    if (*us < 1e3) return fixed_text(*us, 0) + "us";
    if (*us < 1e4) return fixed_text(*us / 1e3, 1) + "ms";
    if (*us < 1e6) return fixed_text(*us / 1e3, 0) + "ms";
    if (*us < 1e7) return fixed_text(*us / 1e6, 1) + "s";
    if (*us < 6e7) return fixed_text(*us / 1e6, 0) + "s";
    return mcpd::format_age(mcpd::Duration(static_cast<std::int64_t>(*us / 1e3)));
}

std::string bytes_text(const json& value) {
    const std::optional<double> bytes = stats_number(value);
    if (!bytes || *bytes < 0) return "-";
    if (*bytes < 1024) return fixed_text(*bytes, 0) + "B";
    double scaled = *bytes / 1024;
    const char* unit = "KiB";
    for (const char* larger : {"MiB", "GiB", "TiB"}) {
        if (scaled < 1024) break;
        scaled /= 1024;
        unit = larger;
    }
    return fixed_text(scaled, scaled < 10 ? 1 : 0) + unit;
}

std::string cpu_text(const json& value) {
    const std::optional<double> percent = stats_number(value);
    if (!percent) return "-";
    return fixed_text(*percent, *percent < 100 ? 1 : 0);
}

std::optional<double> error_ratio(const json& counters) {
    double failed = 0;
    double settled = 0;
    for (const char* key : {"errors", "tool_errors", "timeouts", "child_died"}) {
        const double count = stats_number(stats_member(counters, key)).value_or(0);
        failed += count;
        settled += count;
    }
    for (const char* key : {"replies", "cancelled"})
        settled += stats_number(stats_member(counters, key)).value_or(0);
    if (settled <= 0) return std::nullopt;
    return failed / settled;
}

std::string error_percent_text(const json& counters) {
    const std::optional<double> ratio = error_ratio(counters);
    if (!ratio) return "-";
    const double percent = *ratio * 100;
    return fixed_text(percent, percent < 10 ? 1 : 0) + "%";
}

// ---- Width

std::size_t display_width(std::string_view text) {
    // Every byte but UTF-8's continuation bytes starts a character.
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

std::string cut_to_width(std::string_view text, std::size_t width) {
    std::size_t characters = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (characters == width) return std::string(text.substr(0, i));
        ++characters;
    }
    return std::string(text);
}

}  // namespace mcpctl
