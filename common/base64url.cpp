#include "common/base64url.h"

#include <cstdint>

namespace mcpd {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// The six bits a character stands for, or -1 outside the alphabet.
int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

}  // namespace

std::string base64url_encode(std::string_view bytes) {
    std::string out;
    out.reserve((bytes.size() * 4 + 2) / 3);
    std::size_t at = 0;
    for (; at + 3 <= bytes.size(); at += 3) {
        const std::uint32_t group = std::uint32_t{static_cast<unsigned char>(bytes[at])} << 16 |
                                    std::uint32_t{static_cast<unsigned char>(bytes[at + 1])} << 8 |
                                    std::uint32_t{static_cast<unsigned char>(bytes[at + 2])};
        for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(group >> shift) & 0x3f];
    }
    const std::size_t rest = bytes.size() - at;
    if (rest == 0) return out;
    std::uint32_t group = std::uint32_t{static_cast<unsigned char>(bytes[at])} << 16;
    if (rest == 2) group |= std::uint32_t{static_cast<unsigned char>(bytes[at + 1])} << 8;
    // One byte takes two characters, two bytes three.
    for (std::size_t i = 0; i <= rest; ++i) out += kAlphabet[(group >> (18 - 6 * i)) & 0x3f];
    return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
    if (text.size() % 4 == 1) return std::nullopt;
    std::string out;
    out.reserve(text.size() * 3 / 4);
    std::uint32_t bits = 0;
    int held = 0;  // bits in `bits` not yet written out
    for (const char c : text) {
        const int value = sextet(c);
        if (value < 0) return std::nullopt;
        bits = (bits << 6 | static_cast<std::uint32_t>(value)) & 0xffffff;
        held += 6;
        if (held >= 8) {
            held -= 8;
            out += static_cast<char>((bits >> held) & 0xff);
        }
    }
    // What is left over (2 or 4 bits) encodes no byte and must be zero.
    if ((bits & ((1u << held) - 1)) != 0) return std::nullopt;
    return out;
}

}  // namespace mcpd
