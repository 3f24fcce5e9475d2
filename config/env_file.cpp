#include "config/env_file.h"

namespace mcpd::config {

namespace {

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}
bool is_alpha_or_underscore(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

// Index of the first non-blank character at or after `from` (text.size() if none).
std::size_t skip_blanks(std::string_view text, std::size_t from) {
    while (from < text.size() && is_blank(text[from])) ++from;
    return from;
}

// `text` without trailing blanks.
std::string_view trim_end(std::string_view text) {
    while (!text.empty() && is_blank(text.back())) text.remove_suffix(1);
    return text;
}

// Parse one line (without its newline) into `result`; `number` is its 1-based line number.
void parse_line(std::string_view line, int number, EnvFileResult& result) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t pos = skip_blanks(line, 0);
    if (pos == line.size() || line[pos] == '#') return;

    constexpr std::string_view kExport = "export";
    if (line.substr(pos).starts_with(kExport) && pos + kExport.size() < line.size() &&
        is_blank(line[pos + kExport.size()])) {
        pos = skip_blanks(line, pos + kExport.size());
    }
    const auto column = [](std::size_t index) { return static_cast<int>(index) + 1; };
    const std::size_t equals = line.find('=', pos);
    if (equals == std::string_view::npos) {
        result.errors.push_back(
            {number, column(pos), "expected KEY=VALUE, a '#' comment or a blank line"});
        return;
    }
    const std::string_view key = trim_end(line.substr(pos, equals - pos));
    if (!is_env_name(key)) {
        result.errors.push_back(
            {number, column(pos),
             "invalid variable name: use letters, digits and '_', not starting with a digit"});
        return;
    }
    const std::size_t value_begin = skip_blanks(line, equals + 1);
    std::string_view value = trim_end(line.substr(value_begin));
    if (!value.empty() && (value.front() == '"' || value.front() == '\'')) {
        if (value.size() < 2 || value.back() != value.front()) {
            result.errors.push_back(
                {number, column(value_begin),
                 "unterminated quote: a quoted value must end with the same quote"});
            return;
        }
        value = value.substr(1, value.size() - 2);
    }
    result.vars[std::string(key)] = std::string(value);
}

}  // namespace

bool is_env_name(std::string_view name) {
    if (name.empty() || !is_alpha_or_underscore(name.front())) return false;
    for (const char c : name) {
        if (!is_alpha_or_underscore(c) && !(c >= '0' && c <= '9')) return false;
    }
    return true;
}

EnvFileResult parse_env_file(std::string_view text) {
    EnvFileResult result;
    int number = 0;
    while (!text.empty()) {
        ++number;
        const std::size_t newline = text.find('\n');
        parse_line(text.substr(0, newline), number, result);
        text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    }
    return result;
}

}  // namespace mcpd::config
