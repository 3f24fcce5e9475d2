#include "common/hmac.h"

#include <cstddef>
#include <string>

#include "common/sha256.h"

namespace mcpd {

namespace {

constexpr std::size_t kBlockBytes = 64;

// The key padded (or first hashed) to one block and XORed with `pad`.
std::string padded_key(std::string_view key, unsigned char pad) {
    std::string block(kBlockBytes, '\0');
    if (key.size() > kBlockBytes) {
        const auto digest = sha256_digest(key);
        for (std::size_t i = 0; i < digest.size(); ++i) block[i] = static_cast<char>(digest[i]);
    } else {
        for (std::size_t i = 0; i < key.size(); ++i) block[i] = key[i];
    }
    for (char& c : block) c = static_cast<char>(static_cast<unsigned char>(c) ^ pad);
    return block;
}

}  // namespace

std::array<unsigned char, 32> hmac_sha256(std::string_view key, std::string_view message) {
    std::string inner = padded_key(key, 0x36);
    inner.append(message);
    const auto inner_digest = sha256_digest(inner);
    std::string outer = padded_key(key, 0x5c);
    for (const unsigned char byte : inner_digest) outer += static_cast<char>(byte);
    return sha256_digest(outer);
}

bool equal_in_constant_time(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    // volatile: the compiler may not turn the loop into one that stops at the first difference.
    volatile unsigned char differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        differ = static_cast<unsigned char>(
            differ | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
    return differ == 0;
}

}  // namespace mcpd
