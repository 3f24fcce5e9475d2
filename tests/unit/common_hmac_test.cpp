// HMAC-SHA-256 (common/hmac.h): RFC 4231's test cases, keys at the block size's edges, and the
// comparison of signatures.
#include <catch2/catch.hpp>
#include <string>

#include "common/hmac.h"
#include "common/sha256.h"

namespace {

std::string hmac_hex(std::string_view key, std::string_view message) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (const unsigned char byte : mcpd::hmac_sha256(key, message)) {
        out += kHex[byte >> 4];
        out += kHex[byte & 0xf];
    }
    return out;
}

}  // namespace

TEST_CASE("hmac_sha256 gives RFC 4231's results", "[hmac]") {
    // Test case 1: a 20-byte key.
    CHECK(hmac_hex(std::string(20, '\x0b'), "Hi There") ==
          "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    // Test case 2: a key shorter than the digest.
    CHECK(hmac_hex("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // Test case 3: key and data of bytes that are not text.
    CHECK(hmac_hex(std::string(20, '\xaa'), std::string(50, '\xdd')) ==
          "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    // Test case 6: a key longer than a block is hashed first.
    CHECK(hmac_hex(std::string(131, '\xaa'),
                   "Test Using Larger Than Block-Size Key - Hash Key First") ==
          "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    // Test case 7: key and data both longer than a block.
    CHECK(hmac_hex(std::string(131, '\xaa'),
                   "This is a test using a larger than block-size key and a larger than "
                   "block-size data. The key needs to be hashed before being used by the HMAC "
                   "algorithm.") ==
          "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST_CASE("hmac_sha256 hashes a key only when it is longer than a block", "[hmac]") {
    CHECK(hmac_hex(std::string(64, 'k'), "message") ==
          "890f3a16e0ca0aaa3bf180f70fa8e3970b3fd6505e98fde157988dcc19d1685c");
    CHECK(hmac_hex(std::string(65, 'k'), "message") ==
          "0c256505306af48015530c139bb7add5ad7a6a9291cd511278a067e765816fbd");
}

TEST_CASE("sha256_digest holds the bytes sha256_hex spells", "[hmac]") {
    const auto digest = mcpd::sha256_digest("abc");
    CHECK(digest[0] == 0xba);
    CHECK(digest[1] == 0x78);
    CHECK(digest[31] == 0xad);
}

TEST_CASE("equal_in_constant_time compares every byte", "[hmac]") {
    using mcpd::equal_in_constant_time;
    CHECK(equal_in_constant_time("", ""));
    CHECK(equal_in_constant_time("signature", "signature"));
    CHECK_FALSE(equal_in_constant_time("signature", "signaturf"));
    CHECK_FALSE(equal_in_constant_time("signature", "Signature"));
    CHECK_FALSE(equal_in_constant_time("signature", "signatur"));
    CHECK_FALSE(equal_in_constant_time("", "a"));
    CHECK(equal_in_constant_time(std::string("a\0b", 3), std::string("a\0b", 3)));
    CHECK_FALSE(equal_in_constant_time(std::string("a\0b", 3), std::string("a\0c", 3)));
}
