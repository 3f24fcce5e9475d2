#include "daemon/http/origin_check.h"

#include <algorithm>

#include "common/ascii.h"

namespace mcpd {

namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' ||
           c == '.' || c == '_';
}

bool v6_char(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.';
}

// A port: 1 to 5 digits up to 65535.
bool valid_port(std::string_view text) {
    if (text.empty() || text.size() > 5 || !std::all_of(text.begin(), text.end(), is_digit))
        return false;
    unsigned value = 0;
    for (const char c : text) value = value * 10 + static_cast<unsigned>(c - '0');
    return value <= 65535;
}

// The host of "name", "name:port", "[v6]" or "[v6]:port", lowercased (brackets kept), or
// nothing when `text` is anything else (user information, a path, a zone, an empty port).
std::optional<std::string> host_of(std::string_view text) {
    std::string_view host;
    std::string_view rest;
    if (text.starts_with('[')) {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos || close < 3) return std::nullopt;
        host = text.substr(0, close + 1);
        if (!std::all_of(host.begin() + 1, host.end() - 1, v6_char)) return std::nullopt;
        rest = text.substr(close + 1);
    } else {
        const std::size_t colon = text.find(':');
        host = text.substr(0, colon);
        rest = colon == std::string_view::npos ? std::string_view() : text.substr(colon);
        if (host.empty() || !std::all_of(host.begin(), host.end(), name_char)) return std::nullopt;
    }
    if (!rest.empty() && (rest.front() != ':' || !valid_port(rest.substr(1)))) return std::nullopt;
    return ascii_lowercase(host);
}

bool allowed(const std::string& host, const OriginPolicy& policy) {
    return std::any_of(policy.hosts.begin(), policy.hosts.end(),
                       [&host](const std::string& name) { return ascii_lowercase(name) == host; });
}

std::string policy_names(const OriginPolicy& policy) {
    std::string names;
    for (const std::string& name : policy.hosts) names += (names.empty() ? "" : ", ") + name;
    return names;
}

}  // namespace

OriginPolicy origin_policy_for(std::string_view bind_host) {
    OriginPolicy policy{{"localhost", "127.0.0.1", "[::1]"}};
    std::string named = ascii_lowercase(bind_host);
    if (named.find(':') != std::string::npos && !named.starts_with('[')) named = "[" + named + "]";
    const bool wildcard = named.empty() || named == "0.0.0.0" || named == "[::]";
    if (!wildcard && !allowed(named, policy)) policy.hosts.push_back(named);
    return policy;
}

Result<Done> check_host(std::optional<std::string_view> host, const OriginPolicy& policy,
                        bool unix_socket) {
    if (!host) {
        if (unix_socket) return Done{};
        return permanent_failure("the request has no Host header: send one naming this endpoint (" +
                                 policy_names(policy) + ")");
    }
    const std::optional<std::string> name = host_of(*host);
    if (!name)
        return permanent_failure(
            "the Host header is malformed: it must be a host name or address with an optional "
            "port");
    if (unix_socket || allowed(*name, policy)) return Done{};
    return permanent_failure(
        "the Host header names a host this endpoint does not answer to (a page on another site may "
        "be trying to reach it through DNS rebinding): connect as one of " +
        policy_names(policy));
}

Result<Done> check_origin(std::optional<std::string_view> origin, const OriginPolicy& policy) {
    if (!origin) return Done{};
    if (*origin == "null")
        return permanent_failure(
            "requests from an opaque origin (Origin: null, such as a sandboxed page or a local "
            "file) are refused");
    const std::string text = ascii_lowercase(*origin);
    std::string_view rest = text;
    if (rest.starts_with("http://"))
        rest.remove_prefix(7);
    else if (rest.starts_with("https://"))
        rest.remove_prefix(8);
    else
        return permanent_failure(
            "the Origin header is not an http:// or https:// origin: requests from other schemes "
            "are refused");
    const std::optional<std::string> name = host_of(rest);
    if (!name)
        return permanent_failure(
            "the Origin header is malformed: it must be a scheme, a host and an optional port, "
            "with nothing after them");
    if (allowed(*name, policy)) return Done{};
    return permanent_failure(
        "requests from a page of another site are refused (its Origin is not one of " +
        policy_names(policy) + ")");
}

}  // namespace mcpd
