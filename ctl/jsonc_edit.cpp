#include "ctl/jsonc_edit.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace mcpctl {

namespace {

// Walks JSON text with comments. Each step takes the position of the next byte to read and
// moves it; a false return leaves the reason in `error`.
class Scanner {
public:
    explicit Scanner(std::string_view text) : text_(text) {}

    // Skip white space and comments.
    bool skip_blank(std::size_t& pos) {
        while (pos < text_.size()) {
            const char c = text_[pos];
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                ++pos;
            } else if (c == '/' && pos + 1 < text_.size() && text_[pos + 1] == '/') {
                const std::size_t end = text_.find('\n', pos);
                pos = end == std::string_view::npos ? text_.size() : end + 1;
            } else if (c == '/' && pos + 1 < text_.size() && text_[pos + 1] == '*') {
                const std::size_t end = text_.find("*/", pos + 2);
                if (end == std::string_view::npos) return fail(pos, "a /* comment is not closed");
                pos = end + 2;
            } else {
                break;
            }
        }
        return true;
    }

    // Read the string literal at `pos`, decoded into `out` when it is not null.
    bool read_string(std::size_t& pos, std::string* out) {
        if (pos >= text_.size() || text_[pos] != '"') return fail(pos, "expected a string");
        const std::size_t start = pos++;
        while (pos < text_.size()) {
            const char c = text_[pos++];
            if (c == '"') return true;
            if (c != '\\') {
                if (out) *out += c;
                continue;
            }
            if (pos >= text_.size()) break;
            const char escaped = text_[pos++];
            if (escaped == 'u') {
                if (!read_unicode_escape(pos, out)) return false;
                continue;
            }
            const std::string_view plain = "\"\\/bfnrt";
            const std::string_view decoded = "\"\\/\b\f\n\r\t";
            const std::size_t which = plain.find(escaped);
            if (which == std::string_view::npos)
                return fail(pos - 2, std::string("unknown escape \\") + escaped);
            if (out) *out += decoded[which];
        }
        return fail(start, "a string is not closed");
    }

    // Skip the value that starts at `pos` (after blanks): a string, an object or array with all
    // it holds, or a number or literal.
    bool skip_value(std::size_t& pos) {
        if (pos >= text_.size()) return fail(pos, "expected a value, found the end of the text");
        const char first = text_[pos];
        if (first == '"') return read_string(pos, nullptr);
        if (first == '{' || first == '[') return skip_container(pos);
        if (first == '}' || first == ']' || first == ',' || first == ':')
            return fail(pos, std::string("expected a value, found '") + first + "'");
        const std::size_t start = pos;
        constexpr std::string_view kEnds = ",:{}[]\" \t\r\n/";
        while (pos < text_.size() && kEnds.find(text_[pos]) == std::string_view::npos) ++pos;
        if (pos == start) return fail(pos, "expected a value");
        return true;
    }

    const std::string& error() const { return error_; }

    bool fail(std::size_t pos, std::string_view what) {
        error_ = "line " + std::to_string(line_of(text_, pos)) + ": " + std::string(what);
        return false;
    }

private:
    // The brackets must pair up; strings and comments in between are skipped whole.
    bool skip_container(std::size_t& pos) {
        std::string closers;
        while (pos < text_.size()) {
            const char c = text_[pos];
            if (c == '"') {
                if (!read_string(pos, nullptr)) return false;
                continue;
            }
            if (c == '/') {
                const std::size_t before = pos;
                if (!skip_blank(pos)) return false;
                if (pos == before) return fail(pos, "unexpected '/'");
                continue;
            }
            if (c == '{' || c == '[') {
                closers += c == '{' ? '}' : ']';
            } else if (c == '}' || c == ']') {
                if (closers.empty() || closers.back() != c)
                    return fail(pos, std::string("unexpected '") + c + "'");
                closers.pop_back();
                if (closers.empty()) {
                    ++pos;
                    return true;
                }
            }
            ++pos;
        }
        return fail(pos, "an object or array is not closed");
    }

    bool read_unicode_escape(std::size_t& pos, std::string* out) {
        unsigned code = 0;
        if (!read_hex4(pos, code)) return false;
        if (code >= 0xD800 && code <= 0xDBFF && pos + 1 < text_.size() && text_[pos] == '\\' &&
            text_[pos + 1] == 'u') {
            std::size_t next = pos + 2;
            unsigned low = 0;
            if (!read_hex4(next, low)) return false;
            if (low >= 0xDC00 && low <= 0xDFFF) {
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                pos = next;
            }
        }
        if (out) append_utf8(*out, code);
        return true;
    }

    bool read_hex4(std::size_t& pos, unsigned& code) {
        if (pos + 4 > text_.size()) return fail(pos, "a \\u escape is cut short");
        for (int i = 0; i < 4; ++i) {
            const char c = text_[pos++];
            code <<= 4;
            if (c >= '0' && c <= '9')
                code |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f')
                code |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                code |= static_cast<unsigned>(c - 'A' + 10);
            else
                return fail(pos - 1, "a \\u escape holds a character that is not hexadecimal");
        }
        return true;
    }

    static void append_utf8(std::string& out, unsigned code) {
        if (code < 0x80) {
            out += static_cast<char>(code);
        } else if (code < 0x800) {
            out += static_cast<char>(0xC0 | (code >> 6));
            out += static_cast<char>(0x80 | (code & 0x3F));
        } else if (code < 0x10000) {
            out += static_cast<char>(0xE0 | (code >> 12));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (code >> 18));
            out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (code & 0x3F));
        }
    }

    std::string_view text_;
    std::string error_;
};

// Where the line holding `pos` begins.
std::size_t line_start(std::string_view text, std::size_t pos) {
    const std::size_t newline = pos == 0 ? std::string_view::npos : text.rfind('\n', pos - 1);
    return newline == std::string_view::npos ? 0 : newline + 1;
}

// After `pos`: past the spaces and tabs, and past the line end too when `whole_line`.
std::size_t past_line_rest(std::string_view text, std::size_t pos, bool whole_line) {
    std::size_t end = pos;
    while (end < text.size() && (text[end] == ' ' || text[end] == '\t')) ++end;
    if (!whole_line) return end;
    if (end < text.size() && text[end] == '\r') ++end;
    if (end < text.size() && text[end] == '\n') return end + 1;
    return end;
}

}  // namespace

mcpd::Result<std::vector<JsonMember>> object_members(std::string_view text, JsonSpan object) {
    Scanner scanner(text);
    std::size_t pos = object.begin;
    if (pos >= text.size() || text[pos] != '{') {
        scanner.fail(pos, "expected an object");
        return mcpd::permanent_failure(scanner.error());
    }
    ++pos;
    std::vector<JsonMember> members;
    while (true) {
        if (!scanner.skip_blank(pos)) return mcpd::permanent_failure(scanner.error());
        if (pos < text.size() && text[pos] == '}') return members;
        JsonMember member;
        member.key_span.begin = pos;
        if (!scanner.read_string(pos, &member.key)) return mcpd::permanent_failure(scanner.error());
        member.key_span.end = pos;
        if (!scanner.skip_blank(pos)) return mcpd::permanent_failure(scanner.error());
        if (pos >= text.size() || text[pos] != ':') {
            scanner.fail(pos, "expected ':' after the key \"" + member.key + "\"");
            return mcpd::permanent_failure(scanner.error());
        }
        ++pos;
        if (!scanner.skip_blank(pos)) return mcpd::permanent_failure(scanner.error());
        member.value.begin = pos;
        if (!scanner.skip_value(pos)) return mcpd::permanent_failure(scanner.error());
        member.value.end = pos;
        member.comma = JsonMember::kNoComma;
        if (!scanner.skip_blank(pos)) return mcpd::permanent_failure(scanner.error());
        const bool comma = pos < text.size() && text[pos] == ',';
        if (comma) member.comma = pos++;
        members.push_back(std::move(member));
        if (comma) continue;
        if (!scanner.skip_blank(pos)) return mcpd::permanent_failure(scanner.error());
        if (pos < text.size() && text[pos] == '}') return members;
        scanner.fail(pos, "expected ',' or '}' after the value of \"" + members.back().key + "\"");
        return mcpd::permanent_failure(scanner.error());
    }
}

mcpd::Result<JsonSpan> locate_value(std::string_view text, std::span<const std::string> path) {
    Scanner scanner(text);
    std::size_t pos = 0;
    if (!scanner.skip_blank(pos)) return mcpd::permanent_failure(scanner.error());
    JsonSpan span{pos, pos};
    if (!scanner.skip_value(pos)) return mcpd::permanent_failure(scanner.error());
    span.end = pos;
    std::string where;
    for (const std::string& key : path) {
        mcpd::Result<std::vector<JsonMember>> members = object_members(text, span);
        if (!members) return mcpd::permanent_failure(members.error());
        // The last of equal keys wins, as JSON parsers read them.
        const auto& list = members.value();
        const auto found = std::find_if(list.rbegin(), list.rend(),
                                        [&](const JsonMember& m) { return m.key == key; });
        where += (where.empty() ? "" : ".") + key;
        if (found == list.rend()) return mcpd::permanent_failure("no \"" + where + "\" in it");
        span = found->value;
    }
    return span;
}

std::vector<TextEdit> remove_members(std::string_view text, std::span<const JsonMember> members,
                                     const std::vector<bool>& remove) {
    std::vector<TextEdit> edits;
    const std::size_t count = members.size();
    for (std::size_t first = 0; first < count;) {
        if (!remove.at(first)) {
            ++first;
            continue;
        }
        std::size_t next = first;  // the run [first, next) goes
        while (next < count && remove.at(next)) ++next;
        const JsonMember& last = members[next - 1];
        const bool own_line = starts_line(text, members[first].key_span.begin);
        TextEdit edit;
        if (next < count || first == 0 || last.comma != JsonMember::kNoComma) {
            // Something follows, or the file allows trailing commas, or nothing is kept: the
            // run goes with its own commas, the kept member before it keeps its comma.
            edit.begin = own_line ? line_start(text, members[first].key_span.begin)
                                  : members[first].key_span.begin;
            edit.end = last.comma == JsonMember::kNoComma
                           ? last.value.end
                           : past_line_rest(text, last.comma + 1, own_line);
        } else if (own_line) {
            // The run ends the object: the kept member before it gives up its comma (not what
            // follows the comma on its line, such as a comment), the run its lines.
            edits.push_back({members[first - 1].comma, members[first - 1].comma + 1, ""});
            edit.begin = line_start(text, members[first].key_span.begin);
            if (edit.begin > 0 && text[edit.begin - 1] == '\n') --edit.begin;
            if (edit.begin > 0 && text[edit.begin - 1] == '\r') --edit.begin;
            edit.end = last.value.end;
        } else {
            edit.begin = members[first - 1].value.end;
            edit.end = last.value.end;
        }
        edits.push_back(std::move(edit));
        first = next;
    }
    return edits;
}

mcpd::Result<std::string> apply_edits(std::string_view text, std::vector<TextEdit> edits) {
    std::stable_sort(edits.begin(), edits.end(),
                     [](const TextEdit& a, const TextEdit& b) { return a.begin < b.begin; });
    std::string out;
    std::size_t copied = 0;
    for (const TextEdit& edit : edits) {
        if (edit.begin < copied || edit.end < edit.begin || edit.end > text.size())
            return mcpd::permanent_failure("two edits of line " +
                                           std::to_string(line_of(text, edit.begin)) + " overlap");
        out.append(text.substr(copied, edit.begin - copied));
        out += edit.text;
        copied = edit.end;
    }
    out.append(text.substr(copied));
    return out;
}

std::string without_trailing_commas(std::string_view text) {
    std::string out(text);
    Scanner scanner(text);
    std::size_t pos = 0;
    while (pos < text.size()) {
        const char c = text[pos];
        if (c == '"') {
            if (!scanner.read_string(pos, nullptr)) break;
            continue;
        }
        if (c == '/') {
            const std::size_t before = pos;
            if (!scanner.skip_blank(pos) || pos == before) break;
            continue;
        }
        ++pos;
        if (c != ',') continue;
        std::size_t next = pos;
        if (!scanner.skip_blank(next)) break;
        if (next < text.size() && (text[next] == '}' || text[next] == ']')) out[pos - 1] = ' ';
    }
    return out;
}

std::string_view line_indent(std::string_view text, std::size_t pos) {
    const std::size_t start = line_start(text, pos);
    std::size_t end = start;
    while (end < text.size() && (text[end] == ' ' || text[end] == '\t')) ++end;
    return text.substr(start, end - start);
}

bool starts_line(std::string_view text, std::size_t pos) {
    return line_start(text, pos) + line_indent(text, pos).size() == pos;
}

std::size_t line_of(std::string_view text, std::size_t pos) {
    pos = std::min(pos, text.size());
    return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + pos, '\n'));
}

std::string json_quote(std::string_view value) {
    // nlohmann's own escaping; bytes that are not UTF-8 become U+FFFD rather than an exception.
    return nlohmann::json(std::string(value)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mcpctl
