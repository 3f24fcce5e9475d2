// Byte offsets of the positions parsers give in code points: toml++ names a line and a column,
// libyaml an index from the start. adopt's TOML and YAML edits are made on bytes.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace mcpctl {

class TextPositions {
public:
    explicit TextPositions(std::string_view text);

    // The byte where the code point at 0-based `index` starts (the end of the text past it).
    std::size_t byte_of_index(std::size_t index) const;
    // The byte of 1-based `line` and code-point `column` (the end of the line past it).
    std::size_t byte_of(std::size_t line, std::size_t column) const;

    // The first byte of the line holding `byte`, and the byte after its '\n' (or the end).
    std::size_t line_begin(std::size_t byte) const;
    std::size_t next_line(std::size_t byte) const;

private:
    std::string_view text_;
    std::vector<std::size_t> points_;  // the byte each code point starts at
    std::vector<std::size_t> lines_;   // the byte each line starts at
};

}  // namespace mcpctl
