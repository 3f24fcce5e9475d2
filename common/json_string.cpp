#include "common/json_string.h"

#include <cstring>

namespace mcpd::wire {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// The value of the four hex digits at `p` (checked by the caller).
unsigned hex4(const char* p) {
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
        const char c = p[i];
        value = value * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return value;
}

bool is_high_surrogate(unsigned unit) { return unit >= 0xd800 && unit < 0xdc00; }
bool is_low_surrogate(unsigned unit) { return unit >= 0xdc00 && unit < 0xe000; }

// Whether a \uXXXX escape starts at `p` (before `end`); its code unit into `unit`.
bool unicode_escape(const char* p, const char* end, unsigned& unit) {
    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !is_hex(p[2]) || !is_hex(p[3]) ||
        !is_hex(p[4]) || !is_hex(p[5])) {
        return false;
    }
    unit = hex4(p + 2);
    return true;
}

}  // namespace

bool valid_escapes(std::string_view body) {
    const char* p = body.data();
    const char* const end = p + body.size();
    while ((p = static_cast<const char*>(std::memchr(p, '\\', static_cast<std::size_t>(end - p)))) !=
           nullptr) {
        if (end - p < 2) return false;
        switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            case 'u': break;
            default: return false;
        }
        unsigned unit = 0;
        if (!unicode_escape(p, end, unit)) return false;
        p += 6;
    }
    return true;
}

namespace {

void append_utf8(unsigned code_point, std::string& out) {
    if (code_point < 0x80) {
        out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        out += static_cast<char>(0xc0 | (code_point >> 6));
        out += static_cast<char>(0x80 | (code_point & 0x3f));
    } else if (code_point < 0x10000) {
        out += static_cast<char>(0xe0 | (code_point >> 12));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (code_point & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (code_point >> 18));
        out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (code_point & 0x3f));
    }
}

}  // namespace

bool unescape(std::string_view body, std::string& out) {
    out.clear();
    const char* p = body.data();
    const char* const end = p + body.size();
    while (p < end) {
        const char* slash =
            static_cast<const char*>(std::memchr(p, '\\', static_cast<std::size_t>(end - p)));
        if (slash == nullptr) {
            out.append(p, end);
            break;
        }
        out.append(p, slash);
        p = slash;
        if (end - p < 2) return false;
        char simple = 0;
        switch (p[1]) {
            case '"': simple = '"'; break;
            case '\\': simple = '\\'; break;
            case '/': simple = '/'; break;
            case 'b': simple = '\b'; break;
            case 'f': simple = '\f'; break;
            case 'n': simple = '\n'; break;
            case 'r': simple = '\r'; break;
            case 't': simple = '\t'; break;
            case 'u': break;
            default: return false;
        }
        if (simple != 0) {
            out += simple;
            p += 2;
            continue;
        }
        unsigned unit = 0;
        if (!unicode_escape(p, end, unit)) return false;
        p += 6;
        unsigned low = 0;
        if (is_high_surrogate(unit) && unicode_escape(p, end, low) && is_low_surrogate(low)) {
            unit = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
            p += 6;
        } else if (is_high_surrogate(unit) || is_low_surrogate(unit)) {
            unit = 0xfffd;
        }
        append_utf8(unit, out);
    }
    return true;
}

bool is_integer_token(std::string_view token) {
    if (!token.empty() && token.front() == '-') token.remove_prefix(1);
    if (token.empty() || (token.front() == '0' && token.size() > 1)) return false;
    for (const char c : token) {
        if (c < '0' || c > '9') return false;
    }
    return true;
}

bool decode_string(std::string_view token, std::string& out) {
    if (token.size() < 2 || token.front() != '"' || token.back() != '"') return false;
    return unescape(token.substr(1, token.size() - 2), out);
}

std::string without_lone_surrogates(std::string_view text) {
    std::string out(text);
    // In a valid message a backslash only ever starts an escape inside a string.
    std::size_t at = 0;
    while ((at = out.find('\\', at)) != std::string::npos) {
        const char* const end = out.data() + out.size();
        unsigned unit = 0;
        if (!unicode_escape(out.data() + at, end, unit)) {
            at += 2;
            continue;
        }
        unsigned low = 0;
        if (is_high_surrogate(unit) && unicode_escape(out.data() + at + 6, end, low) &&
            is_low_surrogate(low)) {
            at += 12;
            continue;
        }
        if (is_high_surrogate(unit) || is_low_surrogate(unit)) out.replace(at + 2, 4, "fffd");
        at += 6;
    }
    return out;
}

std::string_view unquoted(std::string_view token) {
    if (token.size() >= 2 && token.front() == '"' && token.back() == '"') {
        return token.substr(1, token.size() - 2);
    }
    return token;
}

}  // namespace mcpd::wire
