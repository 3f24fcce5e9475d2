// Rewriting a message where it lies: the byte ranges the envelope scanner records (Span), and
// splicing new tokens (a session's id, a progress token) into them without re-serialising the
// rest, as one string or as the pieces of one writev.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
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

// The few replacements one message gets (an id, a progress token, a subscription id...),
// held in place so that rewriting a message allocates nothing.
class Replacements {
public:
    static constexpr std::size_t kCapacity = 8;
    // The slots are left unwritten: each is written when pushed and only those are read.
    // Making all eight on every message cost more than the splice itself.
    Replacements() {}
    Replacements(std::initializer_list<Replacement> list) {
        for (const Replacement& r : list) push_back(r);
    }
    void push_back(const Replacement& r) {
        if (size_ == kCapacity) throw std::length_error("more replacements than a message has fields");
        slots_.items[size_++] = r;
    }
    const Replacement* data() const { return slots_.items; }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const Replacement* begin() const { return slots_.items; }
    const Replacement* end() const { return slots_.items + size_; }

private:
    union Slots {
        Slots() {}
        Replacement items[kCapacity];
    } slots_;
    std::size_t size_ = 0;
};

// `text` with each replacement applied (they must not overlap; any order), into `out`.
void splice(std::string_view text, std::span<const Replacement> replacements, std::string& out);
// The same as the pieces to write in order, into `out` (cleared first), copying nothing: they
// point into `text` and into the replacements' texts.
void splice(std::string_view text, std::span<const Replacement> replacements,
            std::vector<std::string_view>& out);
// Pieces (as splice() makes them) joined into `out`, which is cleared first and keeps its memory.
void join(std::span<const std::string_view> pieces, std::string& out);
// The same as a new string.
std::string joined(std::span<const std::string_view> pieces);
inline void splice(std::string_view text, const Replacements& replacements, std::string& out) {
    splice(text, std::span<const Replacement>(replacements.data(), replacements.size()), out);
}
inline void splice(std::string_view text, const Replacements& replacements,
                   std::vector<std::string_view>& out) {
    splice(text, std::span<const Replacement>(replacements.data(), replacements.size()), out);
}

}  // namespace mcpd::wire
