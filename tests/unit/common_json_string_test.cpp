// JSON string text (common/json_string): escapes checked and decoded, a lone surrogate as
// U+FFFD, and messages made readable for parsers that refuse lone surrogates.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/json_string.h"
#include "replacement_char.h"

using namespace mcpd::wire;

TEST_CASE("json string: valid_escapes and unescape read a string's raw text", "[json_string]") {
    CHECK(valid_escapes(R"(a\"\\\/\b\f\n\r\t\u00e9)"));
    CHECK(valid_escapes(R"(\ud83d alone)"));
    CHECK_FALSE(valid_escapes(R"(\q)"));
    CHECK_FALSE(valid_escapes(R"(\u12g4)"));
    CHECK_FALSE(valid_escapes("ends with \\"));
    std::string out = "stale";
    REQUIRE(unescape(R"(x\u00e9\ude00)", out));
    CHECK(out == "x\xc3\xa9" + kReplacement);
}

TEST_CASE("json string: decode_string", "[json_string]") {
    std::string out;
    CHECK(decode_string(R"("plain")", out));
    CHECK(out == "plain");
    CHECK(decode_string(R"("a\ud83db")", out));
    CHECK(out == "a" + kReplacement + "b");
    CHECK(decode_string(R"("\udc00\ud83d")", out));
    CHECK(out == kReplacement + kReplacement);
    CHECK(decode_string(R"("\ud83d\ude00\"\\\/\b\f\n\r\t")", out));
    CHECK(out == "\xf0\x9f\x98\x80\"\\/\b\f\n\r\t");
    CHECK_FALSE(decode_string("17", out));
    CHECK_FALSE(decode_string(R"("\u12")", out));
    CHECK_FALSE(decode_string(R"("a\")", out));
}

TEST_CASE("json string: without_lone_surrogates makes text nlohmann can read",
          "[json_string]") {
    const std::string line =
        R"({"a":"\ud83d","\udc00":"x\ud83d\ude00y\\ud83d","b":"\ud83d\u0041","c":"\\\ud800"})";
    CHECK(nlohmann::json::parse(line, nullptr, false).is_discarded());
    const std::string fixed = without_lone_surrogates(line);
    CHECK(fixed ==
          R"({"a":"\ufffd","\ufffd":"x\ud83d\ude00y\\ud83d","b":"\ufffd\u0041","c":"\\\ufffd"})");
    CHECK(fixed.size() == line.size());
    const nlohmann::json parsed = nlohmann::json::parse(fixed, nullptr, false);
    REQUIRE_FALSE(parsed.is_discarded());
    CHECK(parsed["a"] == kReplacement);
    CHECK(parsed["b"] == kReplacement + "A");
    const std::string plain = R"({"a":"\u00e9\ud83d\ude00"})";
    CHECK(without_lone_surrogates(plain) == plain);
}
