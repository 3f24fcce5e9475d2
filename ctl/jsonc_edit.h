// Editing JSON text in place: find the bytes of a value or of an object's members in text that
// may hold // and /* */ comments and trailing commas (VS Code and Claude files), and replace
// only those bytes, so that everything else in the file stays as it was written.
//
// Pure functions over strings; nothing here reads or writes files.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace mcpctl {

// A byte range [begin, end) of the text.
struct JsonSpan {
    std::size_t begin = 0;
    std::size_t end = 0;

    std::size_t size() const { return end - begin; }
};

// One member of an object, as written.
struct JsonMember {
    std::string key;        // decoded (escapes resolved)
    JsonSpan key_span;      // the quoted key, quotes included
    JsonSpan value;         // the value, from its first to its last byte
    std::size_t comma = 0;  // the comma after the value, or kNoComma
    static constexpr std::size_t kNoComma = static_cast<std::size_t>(-1);
};

// Replace the bytes [begin, end) with `text`.
struct TextEdit {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::string text;
};

// The value at `path` (object keys from the top) in `text`: the whole document for an empty
// path. Fails when the text is not JSON (the message names the line) or a key is missing.
mcpd::Result<JsonSpan> locate_value(std::string_view text, std::span<const std::string> path);

// The members of the object whose value spans `object`, in the order written. Fails when the
// span does not hold an object.
mcpd::Result<std::vector<JsonMember>> object_members(std::string_view text, JsonSpan object);

// The edits that remove the members of `members` (one object's, in order) whose `remove` flag is
// set, with their commas, so that the object stays valid: a member on a line of its own takes
// its line along; the last kept member loses its comma when nothing follows it any more. At
// least one member must be kept.
std::vector<TextEdit> remove_members(std::string_view text, std::span<const JsonMember> members,
                                     const std::vector<bool>& remove);

// `text` with the edits applied. Fails when two edits overlap.
mcpd::Result<std::string> apply_edits(std::string_view text, std::vector<TextEdit> edits);

// `text` with every trailing comma (one that only blanks and comments separate from a closing
// '}' or ']') turned into a space, so that a strict parser reads it; offsets do not move.
std::string without_trailing_commas(std::string_view text);

// The spaces and tabs that begin the line holding `pos`.
std::string_view line_indent(std::string_view text, std::size_t pos);
// Whether only spaces and tabs come before `pos` on its line.
bool starts_line(std::string_view text, std::size_t pos);

// The 1-based line number of the byte at `pos`.
std::size_t line_of(std::string_view text, std::size_t pos);

// A JSON string literal, quotes included.
std::string json_quote(std::string_view value);

}  // namespace mcpctl
