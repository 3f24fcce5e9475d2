// escape_controls: what other people's text (server stderr, clientInfo) looks like once it may
// reach a terminal or a log line.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/terminal_text.h"

using mcpd::escape_controls;
using namespace std::string_literals;

TEST_CASE("escape_controls keeps printable ASCII and well-formed UTF-8 as they are",
          "[terminal_text]") {
    CHECK(escape_controls("") == "");
    CHECK(escape_controls("plain text, 100% ~ok~ {\"a\": [1]}") ==
          "plain text, 100% ~ok~ {\"a\": [1]}");
    // Two-, three- and four-byte sequences, the edges of each range included.
    const std::string utf8 =
        "caf\u00e9 \u00a0 \u00ff \u0800 \u20ac \ud7ff \ue000 \uffff "
        "\U00010000 \U0001f600 \U0010ffff";
    CHECK(escape_controls(utf8) == utf8);
    // Backslashes are text: nothing to escape (the result cannot perform an escape anyway).
    CHECK(escape_controls(R"(C:\path \x1b \u001b)") == R"(C:\path \x1b \u001b)");
}

TEST_CASE("escape_controls writes every C0 control, DEL and ESC as \\u00XX", "[terminal_text]") {
    CHECK(escape_controls("\x1b[31mred\x1b[0m") == "\\u001b[31mred\\u001b[0m");
    CHECK(escape_controls("\x1b]0;title\x07") == "\\u001b]0;title\\u0007");
    CHECK(escape_controls("one\ntwo\r\n") == "one\\u000atwo\\u000d\\u000a");
    CHECK(escape_controls("a\tb") == "a\\u0009b");
    CHECK(escape_controls("x\x7fy") == "x\\u007fy");
    CHECK(escape_controls("nul\0end"s) == "nul\\u0000end");
    for (int c = 0; c < 0x20; ++c) {
        const std::string out = escape_controls(std::string(1, static_cast<char>(c)));
        INFO("byte " << c);
        CHECK(out.size() == 6);
        CHECK(out.rfind("\\u00", 0) == 0);
    }
}

TEST_CASE("escape_controls writes C1 controls (U+0080..U+009F) as \\u00XX", "[terminal_text]") {
    CHECK(escape_controls("\u0080") == "\\u0080");
    CHECK(escape_controls("a\u009b2Jb") == "a\\u009b2Jb");             // CSI
    CHECK(escape_controls("\u009d0;t\u009c") == "\\u009d0;t\\u009c");  // OSC ... ST
    CHECK(escape_controls("\u009f\u00a0") == "\\u009f\u00a0");         // the last C1, the first not
}

TEST_CASE("escape_controls writes each byte that is not well-formed UTF-8 as \\xXX",
          "[terminal_text]") {
    CHECK(escape_controls("\x9b"
                          "2J") == "\\x9b2J");  // an 8-bit CSI on its own
    CHECK(escape_controls("\xff\xfe") == "\\xff\\xfe");
    CHECK(escape_controls("\xc3") == "\\xc3");                             // cut short at the end
    CHECK(escape_controls("\xc3(") == "\\xc3(");                           // bad continuation
    CHECK(escape_controls("\xc0\xaf") == "\\xc0\\xaf");                    // overlong '/'
    CHECK(escape_controls("\xe0\x80\xaf") == "\\xe0\\x80\\xaf");           // overlong, three bytes
    CHECK(escape_controls("\xed\xa0\x80") == "\\xed\\xa0\\x80");           // a UTF-16 surrogate
    CHECK(escape_controls("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
    CHECK(escape_controls("\xf0\x9f\x98") == "\\xf0\\x9f\\x98");           // emoji cut short
    // What follows a bad byte is read afresh: a valid sequence right after it is kept.
    CHECK(escape_controls("\xe2\xe2\x82\xac") == "\\xe2\u20ac");
}

TEST_CASE("escape_controls leaves nothing a terminal would act on", "[terminal_text]") {
    std::string every_byte;
    for (int c = 0; c < 256; ++c) every_byte += static_cast<char>(c);
    const std::string out = escape_controls(every_byte + "\u0085\u009b" + every_byte);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const auto c = static_cast<unsigned char>(out[i]);
        INFO("at " << i);
        REQUIRE(c >= 0x20);
        REQUIRE(c != 0x7f);
        // A C1 control in UTF-8 is 0xc2 then 0x80..0x9f.
        if (c == 0xc2 && i + 1 < out.size())
            REQUIRE(static_cast<unsigned char>(out[i + 1]) >= 0xa0);
    }
    // The result is valid UTF-8: a strict JSON writer accepts it.
    CHECK_NOTHROW(nlohmann::json(out).dump());
}

TEST_CASE("escape_controls keeps a JSON text the same JSON", "[terminal_text]") {
    const nlohmann::json value = {{"log", "\x1b[1mbold\x7f \u009b \u00e9"}, {"n", 1}};
    const std::string dumped = value.dump();
    const std::string escaped = escape_controls(dumped);
    CHECK(escaped.find('\x7f') == std::string::npos);
    CHECK(escaped.find("\u009b") == std::string::npos);
    CHECK(nlohmann::json::parse(escaped) == value);
}
