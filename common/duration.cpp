#include "common/duration.h"

#include <cstdint>
#include <limits>

namespace mcpd {

namespace {

using Rep = Duration::rep;

constexpr Rep kMillisPerSecond = 1000;
constexpr Rep kMillisPerMinute = 60 * kMillisPerSecond;
constexpr Rep kMillisPerHour = 60 * kMillisPerMinute;

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_unit_letter(char c) {
    return c == 'm' || c == 's' || c == 'h';
}

// Milliseconds in one `unit`, or 0 when the unit is not one of ms, s, m, h.
Rep unit_millis(std::string_view unit) {
    if (unit == "ms") return 1;
    if (unit == "s") return kMillisPerSecond;
    if (unit == "m") return kMillisPerMinute;
    if (unit == "h") return kMillisPerHour;
    return 0;
}

// `value` divided by `unit`, rounded half up; both non-negative.
Rep round_div(Rep value, Rep unit) {
    return value / unit + (value % unit >= (unit + 1) / 2);
}

// "4" -> "04": the smaller part of a two-part age.
std::string two_digits(Rep value) {
    std::string text = std::to_string(value);
    return text.size() < 2 ? "0" + text : text;
}

}  // namespace

std::optional<Duration> parse_duration(std::string_view text) {
    if (text.empty()) return std::nullopt;
    constexpr Rep kMax = std::numeric_limits<Rep>::max();
    Rep total = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        if (!is_digit(text[pos])) return std::nullopt;
        Rep number = 0;
        for (; pos < text.size() && is_digit(text[pos]); ++pos) {
            const Rep digit = text[pos] - '0';
            if (number > (kMax - digit) / 10) return std::nullopt;
            number = number * 10 + digit;
        }
        const std::size_t unit_begin = pos;
        while (pos < text.size() && is_unit_letter(text[pos])) ++pos;
        const Rep unit = unit_millis(text.substr(unit_begin, pos - unit_begin));
        if (unit == 0) return std::nullopt;
        if (number > kMax / unit) return std::nullopt;
        const Rep part = number * unit;
        if (total > kMax - part) return std::nullopt;
        total += part;
    }
    return Duration(total);
}

std::string format_duration(Duration d) {
    Rep rest = d.count();
    if (rest == 0) return "0s";
    std::string text;
    if (rest < 0) {
        // Only reachable for values parse_duration never produces; keep them readable.
        if (rest == std::numeric_limits<Rep>::min()) return std::to_string(rest) + "ms";
        text = "-";
        rest = -rest;
    }
    const Rep hours = rest / kMillisPerHour;
    rest %= kMillisPerHour;
    const Rep minutes = rest / kMillisPerMinute;
    rest %= kMillisPerMinute;
    if (hours != 0) text += std::to_string(hours) + "h";
    if (minutes != 0) text += std::to_string(minutes) + "m";
    // A fraction of a second keeps seconds and milliseconds together: "1500ms", "1m1500ms".
    if (rest % kMillisPerSecond != 0) {
        text += std::to_string(rest) + "ms";
    } else if (rest != 0) {
        text += std::to_string(rest / kMillisPerSecond) + "s";
    }
    return text;
}

std::string format_age(Duration d) {
    const Rep ms = d.count() < 0 ? 0 : d.count();
    if (ms < kMillisPerSecond) return std::to_string(ms) + "ms";
    const Rep seconds = round_div(ms, kMillisPerSecond);
    if (seconds < 60) return std::to_string(seconds) + "s";
    if (seconds < 60 * 60)
        return std::to_string(seconds / 60) + "m" + two_digits(seconds % 60) + "s";
    const Rep minutes = round_div(ms, kMillisPerMinute);
    if (minutes < 24 * 60)
        return std::to_string(minutes / 60) + "h" + two_digits(minutes % 60) + "m";
    const Rep hours = round_div(ms, kMillisPerHour);
    return std::to_string(hours / 24) + "d" + two_digits(hours % 24) + "h";
}

}  // namespace mcpd
