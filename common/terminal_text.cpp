#include "common/terminal_text.h"

namespace mcpd {
namespace {

constexpr char kHex[] = "0123456789abcdef";

bool printable_ascii(unsigned char c) {
    return c >= 0x20 && c < 0x7f;
}

// `prefix` and the two hex digits of `value`: "\u00" 0x1b gives "\u001b".
void append_hex(std::string& out, std::string_view prefix, unsigned char value) {
    out += prefix;
    out += kHex[value >> 4];
    out += kHex[value & 0xf];
}

// The length of the well-formed UTF-8 sequence `text` starts with (Unicode table 3-7: no
// overlong forms, no surrogates, nothing past U+10FFFF); 0 when it starts with none.
std::size_t utf8_sequence_length(std::string_view text) {
    const auto byte = [&text](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(0);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xbf;  // the allowed range of the second byte
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        if (lead == 0xe0) low = 0xa0;
        if (lead == 0xed) high = 0x9f;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        if (lead == 0xf0) low = 0x90;
        if (lead == 0xf4) high = 0x8f;
    } else {
        return 0;
    }
    if (text.size() < length || byte(1) < low || byte(1) > high) return 0;
    for (std::size_t i = 2; i < length; ++i) {
        if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
    }
    return length;
}

}  // namespace

void append_escaped_controls(std::string& out, std::string_view text) {
    out.reserve(out.size() + text.size());
    std::size_t at = 0;
    while (at < text.size()) {
        // Plain ASCII, by far the most of it, goes over a run at a time.
        std::size_t end = at;
        while (end < text.size() && printable_ascii(static_cast<unsigned char>(text[end]))) ++end;
        out.append(text.substr(at, end - at));
        at = end;
        if (at == text.size()) break;

        const auto lead = static_cast<unsigned char>(text[at]);
        if (lead < 0x80) {  // C0 or DEL
            append_hex(out, "\\u00", lead);
            ++at;
            continue;
        }
        const std::size_t length = utf8_sequence_length(text.substr(at));
        if (length == 0) {
            append_hex(out, "\\x", lead);
            ++at;
            continue;
        }
        const auto second = static_cast<unsigned char>(text[at + 1]);
        if (lead == 0xc2 && second <= 0x9f) {
            append_hex(out, "\\u00", second);  // C1: U+0080..U+009F is 0xc2 then the code point
        } else {
            out.append(text.substr(at, length));
        }
        at += length;
    }
}

std::string escape_controls(std::string_view text) {
    std::string out;
    append_escaped_controls(out, text);
    return out;
}

}  // namespace mcpd
