// Locating and replacing values in JSON text with comments, keeping every other byte.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ctl/jsonc_edit.h"
#include "jsonc_parse.h"

using mcpctl::JsonMember;
using mcpctl::JsonSpan;
using mcpctl::TextEdit;

namespace {

// The text of the value at `path`; fails the test when it cannot be found.
std::string value_at(const std::string& text, const std::vector<std::string>& path) {
    const mcpd::Result<JsonSpan> span = mcpctl::locate_value(text, path);
    REQUIRE(span.ok());
    return text.substr(span.value().begin, span.value().size());
}

std::vector<JsonMember> members_at(const std::string& text, const std::vector<std::string>& path) {
    const mcpd::Result<JsonSpan> span = mcpctl::locate_value(text, path);
    REQUIRE(span.ok());
    mcpd::Result<std::vector<JsonMember>> members = mcpctl::object_members(text, span.value());
    REQUIRE(members.ok());
    return std::move(members).value();
}

std::string apply(const std::string& text, std::vector<TextEdit> edits) {
    mcpd::Result<std::string> out = mcpctl::apply_edits(text, std::move(edits));
    REQUIRE(out.ok());
    return std::move(out).value();
}

// Remove the members of the object at `path` whose keys are in `keys`.
std::string remove_keys(const std::string& text, const std::vector<std::string>& path,
                        const std::vector<std::string>& keys) {
    const std::vector<JsonMember> members = members_at(text, path);
    std::vector<bool> remove;
    for (const JsonMember& member : members)
        remove.push_back(std::find(keys.begin(), keys.end(), member.key) != keys.end());
    return apply(text, mcpctl::remove_members(text, members, remove));
}

const std::string kCommented = R"({
  // servers for this workspace
  "inputs": [{"id": "key", "type": "promptString", "description": "a } and a ] in a string"}],
  /* a block comment with "quotes" and { braces */
  "servers": {
    "fs": {
      "type": "stdio", // why not
      "command": "npx",
      "args": ["-y", "server-fs"],
    },
    "web\u0020site": {"type": "http", "url": "https://example.com/mcp"},
  },
}
)";

}  // namespace

TEST_CASE("locate_value finds values past comments, strings and trailing commas", "[jsonc]") {
    CHECK(value_at(kCommented, {"servers", "fs", "command"}) == "\"npx\"");
    CHECK(value_at(kCommented, {"servers", "fs", "args"}) == R"(["-y", "server-fs"])");
    CHECK(value_at(kCommented, {"servers", "web site", "type"}) == "\"http\"");
    CHECK(value_at(kCommented, {"inputs"}).starts_with("[{\"id\""));
    CHECK(value_at(kCommented, {}) == kCommented.substr(0, kCommented.size() - 1));
    CHECK(value_at(R"({"a": {"b": -1.5e3}, "c": null})", {"a", "b"}) == "-1.5e3");
    CHECK(value_at(R"({"a": 1, "a": 2})", {"a"}) == "2");
}

TEST_CASE("locate_value decodes escaped keys, surrogate pairs included", "[jsonc]") {
    CHECK(value_at(R"({"\u00e9t\u00e9": 1, "\ud83d\ude00": 2, "q\"k": 3})",
                   {"\xc3\xa9t\xc3\xa9"}) == "1");
    CHECK(value_at(R"({"\ud83d\ude00": 2})", {"\xf0\x9f\x98\x80"}) == "2");
    CHECK(value_at(R"({"q\"k": 3})", {"q\"k"}) == "3");
}

TEST_CASE("locate_value names the line of a syntax error and a missing key", "[jsonc]") {
    const auto unclosed = mcpctl::locate_value("{\n  \"a\": {\n    \"b\": 1\n", {});
    REQUIRE_FALSE(unclosed.ok());
    CHECK(unclosed.error() == "line 4: an object or array is not closed");
    const auto comment = mcpctl::locate_value("{\n /* open", std::vector<std::string>{"a"});
    REQUIRE_FALSE(comment.ok());
    CHECK(comment.error() == "line 2: a /* comment is not closed");
    const auto missing =
        mcpctl::locate_value(R"({"a": {"b": 1}})", std::vector<std::string>{"a", "c"});
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error() == "no \"a.c\" in it");
    const auto mismatched = mcpctl::locate_value("{\"a\": [1}", {});
    REQUIRE_FALSE(mismatched.ok());
    CHECK(mismatched.error() == "line 1: unexpected '}'");
    const auto no_colon = mcpctl::locate_value("{\n\"a\" 1}", std::vector<std::string>{"a"});
    REQUIRE_FALSE(no_colon.ok());
    CHECK(no_colon.error() == "line 2: expected ':' after the key \"a\"");
}

TEST_CASE("object_members lists keys, value spans and commas in order", "[jsonc]") {
    const std::vector<JsonMember> members = members_at(kCommented, {"servers"});
    REQUIRE(members.size() == 2);
    CHECK(members[0].key == "fs");
    CHECK(members[1].key == "web site");
    CHECK(kCommented.substr(members[1].key_span.begin, members[1].key_span.size()) ==
          "\"web\\u0020site\"");
    CHECK(members[1].comma != JsonMember::kNoComma);
    CHECK(kCommented[members[0].comma] == ',');
    CHECK(members_at("{ }", {}).empty());
    CHECK_FALSE(mcpctl::object_members("[1]", JsonSpan{0, 3}).ok());
}

TEST_CASE("replacing a value keeps every other byte", "[jsonc]") {
    const mcpd::Result<JsonSpan> span =
        mcpctl::locate_value(kCommented, std::vector<std::string>{"servers", "fs", "command"});
    REQUIRE(span.ok());
    const std::string edited =
        apply(kCommented, {{span.value().begin, span.value().end, "\"mcpctl\""}});
    std::string expected = kCommented;
    expected.replace(expected.find("\"npx\""), 5, "\"mcpctl\"");
    CHECK(edited == expected);
    CHECK(parse(edited)["servers"]["fs"]["command"] == "mcpctl");
}

TEST_CASE("removing members keeps the object valid, with and without own lines", "[jsonc]") {
    const std::string text = "{\n  \"a\": 1,\n  \"b\": {\"x\": [1, 2]},\n  \"c\": 3\n}\n";
    CHECK(remove_keys(text, {}, {"b"}) == "{\n  \"a\": 1,\n  \"c\": 3\n}\n");
    CHECK(remove_keys(text, {}, {"a"}) == "{\n  \"b\": {\"x\": [1, 2]},\n  \"c\": 3\n}\n");
    CHECK(remove_keys(text, {}, {"c"}) == "{\n  \"a\": 1,\n  \"b\": {\"x\": [1, 2]}\n}\n");
    CHECK(remove_keys(text, {}, {"b", "c"}) == "{\n  \"a\": 1\n}\n");
    CHECK(remove_keys(text, {}, {"a", "c"}) == "{\n  \"b\": {\"x\": [1, 2]}\n}\n");

    const std::string inline_text = R"({"a": 1, "b": 2, "c": 3})";
    CHECK(remove_keys(inline_text, {}, {"b"}) == R"({"a": 1, "c": 3})");
    CHECK(remove_keys(inline_text, {}, {"a"}) == R"({"b": 2, "c": 3})");
    CHECK(remove_keys(inline_text, {}, {"b", "c"}) == R"({"a": 1})");

    // A trailing comma stays where the file had one.
    const std::string trailing = "{\n  \"a\": 1,\n  \"b\": 2,\n}";
    CHECK(remove_keys(trailing, {}, {"b"}) == "{\n  \"a\": 1,\n}");
    // Comments on the lines of kept members stay.
    const std::string commented = "{\n  \"a\": 1, // one\n  // the second\n  \"b\": 2\n}";
    CHECK(remove_keys(commented, {}, {"b"}) == "{\n  \"a\": 1 // one\n  // the second\n}");
    const std::string commented_trailing = "{\n  \"a\": 1, // one\n  \"b\": 2,\n}";
    CHECK(remove_keys(commented_trailing, {}, {"b"}) == "{\n  \"a\": 1, // one\n}");
    for (const char* key : {"a", "b", "c"}) CHECK_NOTHROW(parse(remove_keys(text, {}, {key})));
}

TEST_CASE("apply_edits refuses overlapping edits and takes them in any order", "[jsonc]") {
    const std::string text = "abcdef";
    CHECK(apply(text, {{4, 5, "E"}, {0, 1, "A"}, {2, 2, "+"}}) == "Ab+cdEf");
    const auto overlap = mcpctl::apply_edits(text, {{0, 3, "x"}, {2, 4, "y"}});
    CHECK_FALSE(overlap.ok());
}

TEST_CASE("without_trailing_commas blanks only the commas before a closer", "[jsonc]") {
    CHECK(mcpctl::without_trailing_commas(R"({"a": [1, 2,], "b": ",}", /* ,} */ "c": 3 , // x
})") == R"({"a": [1, 2 ], "b": ",}", /* ,} */ "c": 3   // x
})");
    CHECK(parse(kCommented)["servers"]["web site"]["url"] == "https://example.com/mcp");
}

TEST_CASE("line helpers and json_quote", "[jsonc]") {
    const std::string text = "{\n\t  \"a\": 1\n}";
    const std::size_t key = text.find("\"a\"");
    CHECK(mcpctl::line_indent(text, key) == "\t  ");
    CHECK(mcpctl::starts_line(text, key));
    CHECK_FALSE(mcpctl::starts_line(text, text.find('1')));
    CHECK(mcpctl::line_of(text, key) == 2);
    CHECK(mcpctl::json_quote("a\"b\\c\n\x01") == R"("a\"b\\c\n\u0001")");
}
