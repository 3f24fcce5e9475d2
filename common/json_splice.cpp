#include "common/json_splice.h"

#include <algorithm>
#include <utility>

namespace mcpd::wire {

void splice(std::string_view text, std::vector<Replacement> replacements,
            std::vector<std::string_view>& out) {
    std::sort(replacements.begin(), replacements.end(),
              [](const Replacement& a, const Replacement& b) { return a.span.offset < b.span.offset; });
    out.clear();
    std::size_t at = 0;
    for (const Replacement& r : replacements) {
        out.push_back(text.substr(at, r.span.offset - at));
        out.push_back(r.text);
        at = r.span.offset + r.span.length;
    }
    out.push_back(text.substr(at));
}

void splice(std::string_view text, std::vector<Replacement> replacements, std::string& out) {
    std::vector<std::string_view> pieces;
    splice(text, std::move(replacements), pieces);
    std::size_t size = 0;
    for (std::string_view piece : pieces) size += piece.size();
    out.clear();
    out.reserve(size);
    for (std::string_view piece : pieces) out.append(piece);
}

}  // namespace mcpd::wire
