// base64url without padding (common/base64url.h): RFC 4648's vectors, the two characters that
// differ from base64, and every text the strict decoder refuses.
#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "common/base64url.h"

using mcpd::base64url_decode;
using mcpd::base64url_encode;

TEST_CASE("base64url_encode writes RFC 4648's vectors without padding", "[base64url]") {
    CHECK(base64url_encode("") == "");
    CHECK(base64url_encode("f") == "Zg");
    CHECK(base64url_encode("fo") == "Zm8");
    CHECK(base64url_encode("foo") == "Zm9v");
    CHECK(base64url_encode("foob") == "Zm9vYg");
    CHECK(base64url_encode("fooba") == "Zm9vYmE");
    CHECK(base64url_encode("foobar") == "Zm9vYmFy");
    // Where base64 has '+' and '/', base64url has '-' and '_'.
    CHECK(base64url_encode("\xfb\xff\xbf") == "-_-_");
    CHECK(base64url_encode(std::string("\0\0\0", 3)) == "AAAA");
}

TEST_CASE("base64url_decode reads back what was encoded", "[base64url]") {
    CHECK(base64url_decode("") == std::optional<std::string>(""));
    CHECK(base64url_decode("Zg") == std::optional<std::string>("f"));
    CHECK(base64url_decode("Zm8") == std::optional<std::string>("fo"));
    CHECK(base64url_decode("Zm9v") == std::optional<std::string>("foo"));
    CHECK(base64url_decode("Zm9vYmFy") == std::optional<std::string>("foobar"));
    CHECK(base64url_decode("-_-_") == std::optional<std::string>("\xfb\xff\xbf"));
    std::string every_byte;
    for (int i = 0; i < 256; ++i) every_byte += static_cast<char>(i);
    for (std::size_t length = 0; length <= every_byte.size(); length += 7) {
        const std::string bytes = every_byte.substr(0, length);
        CHECK(base64url_decode(base64url_encode(bytes)) == std::optional<std::string>(bytes));
    }
}

TEST_CASE("base64url_decode refuses padding, other characters and impossible lengths",
          "[base64url]") {
    CHECK_FALSE(base64url_decode("Zg==").has_value());
    CHECK_FALSE(base64url_decode("Zm8=").has_value());
    CHECK_FALSE(base64url_decode("+/+/").has_value());  // base64's alphabet, not base64url's
    CHECK_FALSE(base64url_decode("Zm9 v").has_value());
    CHECK_FALSE(base64url_decode("Zm9v\n").has_value());
    CHECK_FALSE(base64url_decode(std::string("Zm\0v", 4)).has_value());
    CHECK_FALSE(base64url_decode("Zm9v.").has_value());
    CHECK_FALSE(base64url_decode("Z").has_value());  // 4n+1 characters encode no byte count
    CHECK_FALSE(base64url_decode("Zm9vY").has_value());
}

TEST_CASE("base64url_decode refuses unused bits that are not zero", "[base64url]") {
    // "Zg" is "f"; "Zh" to "Zv" set bits of the last character that encode nothing.
    CHECK_FALSE(base64url_decode("Zh").has_value());
    CHECK_FALSE(base64url_decode("Zv").has_value());
    // "Zm8" is "fo"; "Zm9" sets the lowest of its two unused bits.
    CHECK_FALSE(base64url_decode("Zm9").has_value());
    CHECK_FALSE(base64url_decode("Zm-").has_value());
    // So no two texts decode to the same bytes.
    CHECK(base64url_decode("Zm8") == std::optional<std::string>("fo"));
}
