#include "daemon/mux/group_names.h"

#include <fnmatch.h>

#include <algorithm>

namespace mcpd::group {

bool is_model_name(std::string_view name) {
    if (name.empty() || name.size() > 128) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-';
    });
}

std::optional<std::string> prefixed(std::string_view server, std::string_view separator,
                                    std::string_view name) {
    std::string joined;
    joined.reserve(server.size() + separator.size() + name.size());
    joined.append(server).append(separator).append(name);
    if (!is_model_name(joined)) return std::nullopt;
    return joined;
}

std::optional<Unprefixed> unprefixed(const std::vector<std::string>& servers,
                                     std::string_view separator, std::string_view name) {
    std::optional<Unprefixed> best;
    std::size_t best_length = 0;
    for (std::size_t i = 0; i < servers.size(); ++i) {
        const std::string& server = servers[i];
        const std::size_t prefix = server.size() + separator.size();
        if (name.size() <= prefix || !name.starts_with(server) ||
            name.substr(server.size(), separator.size()) != separator)
            continue;
        if (best && server.size() <= best_length) continue;
        best = Unprefixed{i, name.substr(prefix)};
        best_length = server.size();
    }
    return best;
}

bool template_matches(std::string_view uri_template, std::string_view uri) {
    // As an fnmatch pattern: expressions become '*', and the glob characters of the literal
    // parts are escaped.
    std::string pattern;
    bool in_expression = false;
    for (const char c : uri_template) {
        if (in_expression) {
            if (c == '}') in_expression = false;
            continue;
        }
        if (c == '{') {
            in_expression = true;
            pattern += '*';
            continue;
        }
        if (c == '*' || c == '?' || c == '[' || c == '\\') pattern += '\\';
        pattern += c;
    }
    return ::fnmatch(pattern.c_str(), std::string(uri).c_str(), 0) == 0;
}

}  // namespace mcpd::group
