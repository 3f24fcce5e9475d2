#include "daemon/mux/lost_message_id.h"

#include <optional>

#include "common/ascii.h"

namespace mcpd {
namespace {

constexpr std::size_t npos = std::string_view::npos;

std::size_t skip_space(std::string_view t, std::size_t at) {
    while (at < t.size() && is_json_space(t[at])) ++at;
    return at;
}

// Backwards: the position just after the last non-space byte before `end`.
std::size_t skip_space_back(std::string_view t, std::size_t end) {
    while (end > 0 && is_json_space(t[end - 1])) --end;
    return end;
}

// A string or an integer: the ids JSON-RPC allows (MCP forbids null).
bool is_id_token(std::string_view token) {
    if (token.size() >= 2 && token.front() == '"' && token.back() == '"') return true;
    std::size_t digits = token.starts_with('-') ? 1 : 0;
    if (digits == token.size()) return false;
    for (; digits < token.size(); ++digits) {
        if (token[digits] < '0' || token[digits] > '9') return false;
    }
    return true;
}

// Forwards: one past the closing quote of the string opening at `at`; npos when cut off.
std::size_t string_end(std::string_view t, std::size_t at) {
    for (std::size_t i = at + 1; i < t.size(); ++i) {
        if (t[i] == '\\') {
            ++i;
        } else if (t[i] == '"') {
            return i + 1;
        }
    }
    return npos;
}

// Forwards: one past the end of the value starting at `at`; npos when cut off.
std::size_t value_end(std::string_view t, std::size_t at) {
    if (at >= t.size()) return npos;
    if (t[at] == '"') return string_end(t, at);
    if (t[at] == '{' || t[at] == '[') {
        int depth = 0;
        for (std::size_t i = at; i < t.size(); ++i) {
            if (t[i] == '"') {
                i = string_end(t, i);
                if (i == npos) return npos;
                --i;
            } else if (t[i] == '{' || t[i] == '[') {
                ++depth;
            } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
                return i + 1;
            }
        }
        return npos;
    }
    std::size_t i = at;
    while (i < t.size() && !is_json_space(t[i]) && t[i] != ',' && t[i] != '}' && t[i] != ']') ++i;
    return i < t.size() ? i : npos;  // a scalar running into the edge may go on
}

// Whether the quote at `at` is escaped; nullopt when its backslashes reach the edge.
std::optional<bool> escaped(std::string_view t, std::size_t at) {
    std::size_t backslashes = 0;
    while (at > backslashes && t[at - backslashes - 1] == '\\') ++backslashes;
    if (backslashes == at) return std::nullopt;
    return backslashes % 2 == 1;
}

// Backwards: the opening quote of the string whose closing quote is at `close`; npos when
// cut off.
std::size_t string_start(std::string_view t, std::size_t close) {
    for (std::size_t i = close; i-- > 0;) {
        if (t[i] != '"') continue;
        const std::optional<bool> is_escaped = escaped(t, i);
        if (!is_escaped) return npos;
        if (!*is_escaped) return i;
    }
    return npos;
}

// Backwards: where the value ending just before `end` starts; npos when cut off.
std::size_t value_start(std::string_view t, std::size_t end) {
    if (end == 0) return npos;
    const char last = t[end - 1];
    if (last == '"') return string_start(t, end - 1);
    if (last == '}' || last == ']') {
        int depth = 0;
        for (std::size_t i = end; i-- > 0;) {
            if (t[i] == '"') {
                i = string_start(t, i);
                if (i == npos) return npos;
            } else if (t[i] == '}' || t[i] == ']') {
                ++depth;
            } else if ((t[i] == '{' || t[i] == '[') && --depth == 0) {
                return i;
            }
        }
        return npos;
    }
    std::size_t i = end;
    while (i > 0 && !is_json_space(t[i - 1]) && t[i - 1] != ',' && t[i - 1] != ':' && t[i - 1] != '{' &&
           t[i - 1] != '[')
        --i;
    return i > 0 ? i : npos;
}

// The members of the top-level object, first to last, as far as the head reaches.
void read_head(std::string_view t, LostMessageId& out) {
    std::size_t i = skip_space(t, 0);
    if (i >= t.size() || t[i] != '{') return;
    i = skip_space(t, i + 1);
    while (i < t.size() && t[i] == '"') {
        const std::size_t key_end = string_end(t, i);
        if (key_end == npos) return;
        const std::string_view key = t.substr(i + 1, key_end - i - 2);
        i = skip_space(t, key_end);
        if (i >= t.size() || t[i] != ':') return;
        i = skip_space(t, i + 1);
        if (key == "result" || key == "error") out.response = true;
        if (key == "method") out.request = true;
        const std::size_t end = value_end(t, i);
        if (end == npos) return;
        if (key == "id" && out.id.empty() && is_id_token(t.substr(i, end - i))) {
            out.id = t.substr(i, end - i);
        }
        i = skip_space(t, end);
        if (i >= t.size() || t[i] != ',') return;
        i = skip_space(t, i + 1);
    }
}

// The members of the top-level object, last to first, as far as the tail reaches back.
std::string read_tail_id(std::string_view t) {
    std::size_t end = skip_space_back(t, t.size());
    if (end == 0 || t[end - 1] != '}') return {};
    end = skip_space_back(t, end - 1);
    while (end > 0) {
        const std::size_t start = value_start(t, end);
        if (start == npos) return {};
        const std::string_view value = t.substr(start, end - start);
        std::size_t at = skip_space_back(t, start);
        if (at == 0 || t[at - 1] != ':') return {};
        at = skip_space_back(t, at - 1);
        if (at == 0 || t[at - 1] != '"') return {};
        const std::size_t key_start = string_start(t, at - 1);
        if (key_start == npos) return {};
        if (t.substr(key_start + 1, at - key_start - 2) == "id") {
            return is_id_token(value) ? std::string(value) : std::string();
        }
        end = skip_space_back(t, key_start);
        if (end == 0 || t[end - 1] != ',') return {};
        end = skip_space_back(t, end - 1);
    }
    return {};
}

}  // namespace

LostMessageId read_lost_message_id(std::string_view head, std::string_view tail) {
    LostMessageId out;
    read_head(head, out);
    if (out.id.empty()) out.id = read_tail_id(tail);
    return out;
}

}  // namespace mcpd
