#include "common/json_splice.h"

#include <algorithm>
#include <cstring>

namespace mcpd::wire {

namespace {

// Calls `fn` with each replacement in text order, without allocating for the few a message has.
template <typename Fn>
void in_text_order(std::span<const Replacement> replacements, Fn&& fn) {
    const auto earlier = [](const Replacement* a, const Replacement* b) {
        return a->span.offset < b->span.offset;
    };
    if (replacements.size() <= Replacements::kCapacity) {
        std::array<const Replacement*, Replacements::kCapacity> order{};
        for (std::size_t i = 0; i < replacements.size(); ++i) order[i] = &replacements[i];
        const auto last = order.begin() + static_cast<std::ptrdiff_t>(replacements.size());
        // An insertion sort: one to three items, usually in order already, where std::sort's
        // set-up costs more than the sorting.
        for (auto it = order.begin() + 1; it < last; ++it) {
            for (auto at = it; at != order.begin() && earlier(*at, *(at - 1)); --at)
                std::iter_swap(at, at - 1);
        }
        for (auto it = order.begin(); it != last; ++it) fn(**it);
        return;
    }
    std::vector<const Replacement*> order;
    for (const Replacement& r : replacements) order.push_back(&r);
    std::sort(order.begin(), order.end(), earlier);
    for (const Replacement* r : order) fn(*r);
}

// Calls `piece` with each piece of the spliced text, in order: the text before, between and
// after the replacements, and each replacement's own.
template <typename Fn>
void for_each_piece(std::string_view text, std::span<const Replacement> replacements, Fn&& piece) {
    if (replacements.size() == 1) {
        // The usual rewrite, a message's id alone: three pieces, nothing to order.
        const Replacement& r = replacements[0];
        piece(text.substr(0, r.span.offset));
        piece(r.text);
        piece(text.substr(r.span.offset + r.span.length));
        return;
    }
    std::size_t at = 0;
    in_text_order(replacements, [&](const Replacement& r) {
        piece(text.substr(at, r.span.offset - at));
        piece(r.text);
        at = r.span.offset + r.span.length;
    });
    piece(text.substr(at));
}

// Copies `piece` to `at` and moves `at` past it. A removal's text may have no data at all.
void copy_piece(char*& at, std::string_view piece) {
    if (piece.empty()) return;
    std::memcpy(at, piece.data(), piece.size());
    at += piece.size();
}

}  // namespace

void splice(std::string_view text, std::span<const Replacement> replacements,
            std::vector<std::string_view>& out) {
    out.clear();
    for_each_piece(text, replacements, [&out](std::string_view piece) { out.push_back(piece); });
}

void splice(std::string_view text, std::span<const Replacement> replacements, std::string& out) {
    std::size_t size = text.size();
    for (const Replacement& r : replacements) size = size - r.span.length + r.text.size();
    // Sized once and written through a cursor: an append per piece checked the capacity each
    // time and cost more than the copying (a group's call is spliced this way on every request).
    out.resize(size);
    char* at = out.data();
    for_each_piece(text, replacements, [&at](std::string_view piece) { copy_piece(at, piece); });
}

void join(std::span<const std::string_view> pieces, std::string& out) {
    std::size_t size = 0;
    for (std::string_view piece : pieces) size += piece.size();
    out.resize(size);
    char* at = out.data();
    for (std::string_view piece : pieces) copy_piece(at, piece);
}

std::string joined(std::span<const std::string_view> pieces) {
    std::string out;
    join(pieces, out);
    return out;
}

}  // namespace mcpd::wire
