// The byte classes HTTP heads are read and written with: RFC 9110's token characters, the
// control characters no header may hold, and the blanks around a value. Shared by the reader
// of request heads and the writer of responses (http_message.h).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "common/ascii.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mcpd::http_chars {

// RFC 9110's tchar, as a table: heads are read a byte at a time.
constexpr std::array<bool, 256> token_chars() {
    std::array<bool, 256> table{};
    for (int c = 'A'; c <= 'Z'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (int c = 'a'; c <= 'z'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (int c = '0'; c <= '9'; ++c) table[static_cast<std::size_t>(c)] = true;
    for (const char c : std::string_view("!#$%&'*+-.^_`|~"))
        table[static_cast<unsigned char>(c)] = true;
    return table;
}
inline constexpr std::array<bool, 256> kTokenChars = token_chars();
// The same, giving a header name's byte lowercased, or 0 outside the set: one pass checks and
// lowers a name.
constexpr std::array<char, 256> token_lower() {
    std::array<char, 256> table{};
    for (std::size_t c = 0; c < table.size(); ++c)
        if (kTokenChars[c]) table[c] = ascii_lower(static_cast<char>(c));
    return table;
}
inline constexpr std::array<char, 256> kTokenLower = token_lower();

inline bool is_token(std::string_view text) {
    if (text.empty()) return false;
    for (const char c : text)
        if (!kTokenChars[static_cast<unsigned char>(c)]) return false;
    return true;
}

inline std::string_view trimmed(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return text;
}

// Control characters other than tab, and DEL.
constexpr std::array<bool, 256> control_chars() {
    std::array<bool, 256> table{};
    for (int c = 0; c < 0x20; ++c) table[static_cast<std::size_t>(c)] = c != '\t';
    table[0x7F] = true;
    return table;
}
inline constexpr std::array<bool, 256> kControlChars = control_chars();
inline bool is_control(char c) {
    return kControlChars[static_cast<unsigned char>(c)];
}

#if defined(__SSE2__)
// A bit for each of the sixteen bytes from `p` that is a control character.
inline unsigned control_bits(const char* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // 0x00 to 0x1F: no bit of 0xE0 set.
    const __m128i high_bits = _mm_set1_epi8(static_cast<char>(0xE0));
    const __m128i low = _mm_cmpeq_epi8(_mm_and_si128(bytes, high_bits), _mm_setzero_si128());
    const __m128i tab = _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\t'));
    const __m128i found =
        _mm_or_si128(_mm_andnot_si128(tab, low), _mm_cmpeq_epi8(bytes, _mm_set1_epi8(0x7F)));
    return static_cast<unsigned>(_mm_movemask_epi8(found));
}
#endif

// Whether `text` holds one: sixteen bytes at a time where SSE2 is (every x86-64).
inline bool has_control(std::string_view text) {
    const char* p = text.data();
    const char* const end = p + text.size();
#if defined(__SSE2__)
    for (; end - p >= 16; p += 16)
        if (control_bits(p) != 0) return true;
#endif
    // The rest (most values are shorter than sixteen bytes) by table, without a branch a byte.
    bool found = false;
    for (; p < end; ++p) found |= is_control(*p);
    return found;
}

// The same for `text` with at least sixteen readable bytes after it (in a string's spare
// room): the last block is read whole, its bytes past the end masked off.
inline bool has_control_before_slack(std::string_view text) {
#if defined(__SSE2__)
    const char* p = text.data();
    const char* const end = p + text.size();
    for (; p < end; p += 16) {
        unsigned bits = control_bits(p);
        if (end - p < 16) bits &= (1U << (end - p)) - 1;
        if (bits != 0) return true;
    }
    return false;
#else
    return has_control(text);
#endif
}

}  // namespace mcpd::http_chars
