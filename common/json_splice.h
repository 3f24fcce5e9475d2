// Rewriting a message where it lies: the byte ranges the envelope scanner records (Span), and
// splicing new tokens (a session's id, a progress token) into them without re-serialising the
// rest, as one string or as the pieces of one writev.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcpd::wire {

// A byte range of a message's text; empty when the field is absent.
struct Span {
    std::uint32_t offset = 0;
    std::uint32_t length = 0;
    bool empty() const { return length == 0; }
    std::string_view in(std::string_view text) const { return text.substr(offset, length); }
    bool operator==(const Span&) const = default;
};

// One change to make: replace the bytes of `span` with `text`.
struct Replacement {
    Span span;
    std::string_view text;
};

// `text` with each replacement applied (they must not overlap; any order), into `out`.
void splice(std::string_view text, std::vector<Replacement> replacements, std::string& out);
// The same as the pieces to write in order, into `out` (cleared first), copying nothing: they
// point into `text` and into the replacements' texts.
void splice(std::string_view text, std::vector<Replacement> replacements,
            std::vector<std::string_view>& out);

}  // namespace mcpd::wire
