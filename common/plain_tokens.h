// The tokens of the plain pass (plain_envelope.cpp): the byte classes that end a string's run
// or a scalar, the run of ordinary string bytes found sixteen at a time, UTF-8 sequences, and
// object keys compared with literals as integers.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mcpd::wire::plain {

// Byte classes: what ends a string's run of ordinary bytes (where SSE2 does not find it), and
// what ends a scalar token.
#if !defined(__SSE2__)
constexpr std::array<bool, 256> string_stops() {
    std::array<bool, 256> stops{};
    for (int c = 0; c < 0x20; ++c) stops[static_cast<std::size_t>(c)] = true;
    for (int c = 0x80; c < 0x100; ++c) stops[static_cast<std::size_t>(c)] = true;
    stops['"'] = stops['\\'] = true;
    return stops;
}
constexpr std::array<bool, 256> kStringStops = string_stops();
#endif
constexpr std::array<bool, 256> scalar_stops() {
    std::array<bool, 256> stops{};
    for (const char c : std::string_view(" \t\n\r,:[]{}\""))
        stops[static_cast<unsigned char>(c)] = true;
    return stops;
}
constexpr std::array<bool, 256> kScalarStops = scalar_stops();

// The end of the run of ordinary string bytes from `p`: at the first quote, backslash, control
// character or non-ASCII byte, or `end`. Sixteen bytes at a time where SSE2 is (every x86-64),
// up to the end: the bytes after it are the padding, and a stop found there counts as `end`.
[[gnu::always_inline]] inline const unsigned char* ordinary_run(const unsigned char* p,
                                                                const unsigned char* const end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(' ');
    for (; p < end; p += 16) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        // Signed, a non-ASCII byte is negative: one compare finds it and the control characters.
        const __m128i stops = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
            _mm_cmplt_epi8(bytes, space));
        const auto mask = static_cast<unsigned>(_mm_movemask_epi8(stops));
        if (mask != 0) {
            const unsigned char* const stop = p + std::countr_zero(mask);
            return stop < end ? stop : end;
        }
    }
    return end;
#else
    while (p < end && !kStringStops[*p]) ++p;
    return p;
#endif
}

// The length of the RFC 3629 UTF-8 sequence at `p` (no overlong forms, no surrogates, nothing
// past U+10FFFF), or 0 when there is none.
inline std::ptrdiff_t utf8_sequence(const unsigned char* p, const unsigned char* end) {
    const unsigned lead = *p;
    std::ptrdiff_t more = 0;
    std::uint32_t code_point = 0;
    std::uint32_t least = 0;
    if ((lead & 0xe0) == 0xc0) {
        more = 1, code_point = lead & 0x1f, least = 0x80;
    } else if ((lead & 0xf0) == 0xe0) {
        more = 2, code_point = lead & 0x0f, least = 0x800;
    } else if ((lead & 0xf8) == 0xf0) {
        more = 3, code_point = lead & 0x07, least = 0x10000;
    } else {
        return 0;
    }
    if (end - p <= more) return 0;
    for (std::ptrdiff_t i = 1; i <= more; ++i) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        code_point = code_point << 6 | (p[i] & 0x3fU);
    }
    if (code_point < least || code_point > 0x10ffff ||
        (code_point >= 0xd800 && code_point <= 0xdfff))
        return 0;
    return more + 1;
}

// `text == literal`, by length first; a short literal is compared as one integer, without a
// call to memcmp.
template <std::size_t N>
[[gnu::always_inline]] inline bool is(std::string_view text, const char (&literal)[N]) {
    constexpr std::size_t length = N - 1;
    if (text.size() != length) return false;
    if constexpr (length <= sizeof(std::uint64_t)) {
        std::uint64_t a = 0;
        std::uint64_t b = 0;
        std::memcpy(&a, text.data(), length);
        std::memcpy(&b, literal, length);
        return a == b;
    } else {
        return std::memcmp(text.data(), literal, length) == 0;
    }
}

// A key literal as a template argument, so that what it is compared with is computed once,
// at compile time.
template <std::size_t N>
struct Literal {
    char text[N];
    // NOLINTNEXTLINE(google-explicit-constructor): written as a string literal at each use
    constexpr Literal(const char (&literal)[N]) { std::copy_n(literal, N, text); }
    static constexpr std::size_t size = N - 1;

    // The first eight bytes as one integer in memory order, zero past the end: what a load of
    // eight bytes gives once masked to the length.
    constexpr std::uint64_t head() const {
        std::uint64_t word = 0;
        for (std::size_t i = 0; i < size && i < 8; ++i) {
            const auto byte = static_cast<std::uint64_t>(static_cast<unsigned char>(text[i]));
            word |= std::endian::native == std::endian::little ? byte << (8 * i)
                                                               : byte << (8 * (7 - i));
        }
        return word;
    }
};

// An object's key, with its first eight bytes read once, so that each comparison with a
// literal of up to eight bytes is one comparison of lengths and one of integers.
struct Key {
    std::string_view text;
    std::uint64_t head = 0;

    // `text` lies in a padded message, so eight bytes can be loaded from its start.
    static Key of(const char* data, std::size_t size) {
        std::uint64_t word = 0;
        std::memcpy(&word, data, sizeof word);
        if (size < 8) {
            const std::uint64_t kept = (std::uint64_t{1} << (8 * size)) - 1;
            word &= std::endian::native == std::endian::little ? kept
                                                               : ~(~std::uint64_t{0} >> (8 * size));
        }
        return Key{std::string_view(data, size), word};
    }
};

template <Literal L>
[[gnu::always_inline]] inline bool is(const Key& key) {
    constexpr std::uint64_t head = L.head();
    if (key.text.size() != L.size || key.head != head) return false;
    if constexpr (L.size <= 8) {
        return true;
    } else {
        return std::memcmp(key.text.data() + 8, L.text + 8, L.size - 8) == 0;
    }
}

}  // namespace mcpd::wire::plain
