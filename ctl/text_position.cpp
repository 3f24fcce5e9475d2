#include "ctl/text_position.h"

#include <algorithm>

namespace mcpctl {

TextPositions::TextPositions(std::string_view text) : text_(text) {
    lines_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i) {
        // A UTF-8 continuation byte (10xxxxxx) belongs to the code point before it.
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) points_.push_back(i);
        if (text[i] == '\n') lines_.push_back(i + 1);
    }
}

std::size_t TextPositions::byte_of_index(std::size_t index) const {
    return index < points_.size() ? points_[index] : text_.size();
}

std::size_t TextPositions::byte_of(std::size_t line, std::size_t column) const {
    if (line == 0 || line > lines_.size()) return text_.size();
    const std::size_t begin = lines_[line - 1];
    const std::size_t end = line < lines_.size() ? lines_[line] : text_.size();
    const auto first = std::lower_bound(points_.begin(), points_.end(), begin);
    const std::size_t at = static_cast<std::size_t>(first - points_.begin()) + column - 1;
    return column == 0 || at >= points_.size() ? end : std::min(points_[at], end);
}

std::size_t TextPositions::line_begin(std::size_t byte) const {
    const auto after = std::upper_bound(lines_.begin(), lines_.end(), byte);
    return *(after - 1);
}

std::size_t TextPositions::next_line(std::size_t byte) const {
    const auto after = std::upper_bound(lines_.begin(), lines_.end(), byte);
    return after == lines_.end() ? text_.size() : *after;
}

}  // namespace mcpctl
