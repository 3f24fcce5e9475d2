#include "daemon/control/http_head.h"

#include <algorithm>

namespace mcpd {

namespace {

bool token_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), token_char);
}

bool same_name(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) {
            return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
        };
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

std::string_view trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// The next line of `text` without its CR LF or LF; `text` moves past it.
std::string_view next_line(std::string_view& text) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
}

// A header value holds no control characters but tab.
bool clean_value(std::string_view value) {
    return std::none_of(value.begin(), value.end(), [](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return (byte < 0x20 && c != '\t') || byte == 0x7F;
    });
}

bool read_request_line(std::string_view line, HttpHead& head) {
    const std::size_t first = line.find(' ');
    const std::size_t last = line.rfind(' ');
    if (first == std::string_view::npos || first == last) return false;
    const std::string_view method = line.substr(0, first);
    const std::string_view target = line.substr(first + 1, last - first - 1);
    const std::string_view version = line.substr(last + 1);
    if (!is_token(method) || target.empty() || target.front() != '/') return false;
    if (target.find_first_of(" \t") != std::string_view::npos || !clean_value(target)) return false;
    if (version.size() != 8 || !version.starts_with("HTTP/1.") || version[7] < '0' ||
        version[7] > '9')
        return false;
    head.method = method;
    head.path = target.substr(0, target.find_first_of("?#"));
    head.minor = version[7] - '0';
    return true;
}

}  // namespace

std::size_t http_head_end(std::string_view received) {
    const std::size_t crlf = received.find("\r\n\r\n");
    const std::size_t lf = received.find("\n\n");
    if (crlf == std::string_view::npos && lf == std::string_view::npos)
        return std::string_view::npos;
    if (lf == std::string_view::npos || (crlf != std::string_view::npos && crlf < lf))
        return crlf + 4;
    return lf + 2;
}

std::optional<HttpHead> parse_http_head(std::string_view text) {
    HttpHead head;
    if (!read_request_line(next_line(text), head)) return std::nullopt;
    while (!text.empty()) {
        const std::string_view line = next_line(text);
        if (line.empty()) break;  // the end of the head
        // A folded line continues a header in a way peers read differently: refused.
        if (line.front() == ' ' || line.front() == '\t') return std::nullopt;
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos || !is_token(line.substr(0, colon)))
            return std::nullopt;
        const std::string_view name = line.substr(0, colon);
        const std::string_view value = trimmed(line.substr(colon + 1));
        if (!clean_value(value)) return std::nullopt;
        std::optional<std::string>* kept = same_name(name, "Host")            ? &head.host
                                           : same_name(name, "Authorization") ? &head.authorization
                                                                              : nullptr;
        if (kept == nullptr) continue;
        if (kept->has_value()) return std::nullopt;  // given twice: which one counts is unclear
        *kept = std::string(value);
    }
    return head;
}

}  // namespace mcpd
