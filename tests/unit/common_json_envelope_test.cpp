// The envelope scanner (full validation plus raw spans of the fields a multiplexer rewrites)
// and the splice that puts new tokens into the original bytes.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/json_envelope.h"
#include "envelope_scan.h"

using namespace mcpd::wire;
using mcpd::testing::kMax;
using mcpd::testing::scan;
using mcpd::testing::scan_ok;
using mcpd::testing::Scanned;

namespace {

std::string nested(int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') +
           std::string(static_cast<std::size_t>(depth), ']');
}

}  // namespace

TEST_CASE("envelope: a request's fields and their spans", "[envelope]") {
    const Scanned s = scan_ok(
        R"({"jsonrpc":"2.0","id":42,"method":"resources/read","params":{"uri":"demo://x","level":"info","taskId":"t1","requestId":"r9","_meta":{"progressToken":"tok","io.modelcontextprotocol/related-task":{"taskId":"t0"},"io.modelcontextprotocol/subscriptionId":5}}})");
    const Envelope& e = s.envelope;
    CHECK(e.jsonrpc_ok);
    CHECK(e.id_kind == IdKind::integer);
    CHECK(s.span(e.id) == "42");
    CHECK(e.has_method);
    CHECK(e.method == "resources/read");
    CHECK(e.has_params);
    CHECK_FALSE(e.has_result);
    CHECK_FALSE(e.has_error);
    CHECK(e.uri == "demo://x");
    CHECK(e.level == "info");
    CHECK(e.task_id == "t1");
    CHECK(s.span(e.request_id) == R"("r9")");
    CHECK(s.span(e.progress_token) == R"("tok")");
    CHECK(e.progress_token_valid);
    CHECK(s.span(e.related_task_id) == R"("t0")");
    CHECK(s.span(e.subscription_id) == "5");
    CHECK(e.is_request());
    CHECK_FALSE(e.is_notification());
    CHECK_FALSE(e.is_response());
}

TEST_CASE("envelope: absent fields have empty spans", "[envelope]") {
    const Scanned s = scan_ok(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    const Envelope& e = s.envelope;
    CHECK(e.id_kind == IdKind::absent);
    CHECK(e.id.empty());
    CHECK(e.progress_token.empty());
    CHECK(e.request_id.empty());
    CHECK(e.subscription_id.empty());
    CHECK(e.related_task_id.empty());
    CHECK_FALSE(e.has_params);
    CHECK(e.is_notification());
}

TEST_CASE("envelope: id kinds and their exact bytes", "[envelope]") {
    struct Case {
        std::string token;
        IdKind kind;
    };
    const std::vector<Case> cases = {
        {"1", IdKind::integer},
        {R"("1")", IdKind::string},
        {"-5", IdKind::integer},
        {"0", IdKind::integer},
        {"12345678901234567890", IdKind::integer},
        {"123456789012345678901234567890", IdKind::integer},
        {R"("a\"b\\c\u0041")", IdKind::string},
        {R"("")", IdKind::string},
        {"null", IdKind::null},
        {"1.5", IdKind::invalid},
        {"1.0", IdKind::invalid},
        {"1e5", IdKind::invalid},
        {"-0.0", IdKind::invalid},
        {"{}", IdKind::invalid},
        {R"({"a":1})", IdKind::invalid},
        {"[1]", IdKind::invalid},
        {"true", IdKind::invalid},
    };
    for (const Case& c : cases) {
        DYNAMIC_SECTION("id " << c.token) {
            const Scanned s = scan_ok(R"({"jsonrpc":"2.0","id":)" + c.token + R"(,"method":"m"})");
            CHECK(s.envelope.id_kind == c.kind);
            // A scalar is recorded whole (an object or array id is only ever refused).
            if (c.token.front() != '{' && c.token.front() != '[') {
                CHECK(s.span(s.envelope.id) == c.token);
            }
        }
    }
}

TEST_CASE("envelope: spans exclude the whitespace around tokens", "[envelope]") {
    const Scanned s = scan_ok(
        "{ \"jsonrpc\" : \"2.0\" , \"id\" :  7 \t, \"method\" : \"m\" , \"params\" : { \"_meta\" "
        ": { \"progressToken\" :  \"a b\"  } , \"requestId\" : 12 } }");
    CHECK(s.span(s.envelope.id) == "7");
    CHECK(s.span(s.envelope.progress_token) == R"("a b")");
    CHECK(s.span(s.envelope.request_id) == "12");
    CHECK(s.envelope.jsonrpc_ok);
    // A number last in its object, followed by spaces.
    const Scanned last = scan_ok(R"({"jsonrpc":"2.0","method":"m","id":12   })");
    CHECK(last.span(last.envelope.id) == "12");
    const Scanned token_last =
        scan_ok(R"({"jsonrpc":"2.0","method":"m","params":{"_meta":{"progressToken":-99  }}})");
    CHECK(token_last.span(token_last.envelope.progress_token) == "-99");
    CHECK(token_last.envelope.progress_token_valid);
}

TEST_CASE("envelope: escaped strings are copied unescaped, spans stay raw", "[envelope]") {
    const Scanned s = scan_ok(
        R"({"jsonrpc":"2.0","id":"x\ny","method":"tools\/call","params":{"uri":"demo:\/\/\u00e9","_meta":{"progressToken":"t\"1"}}})");
    CHECK(s.envelope.method == "tools/call");
    CHECK(s.envelope.uri == "demo://\xc3\xa9");
    CHECK(s.span(s.envelope.id) == R"("x\ny")");
    CHECK(s.span(s.envelope.progress_token) == R"("t\"1")");
    // Keys are compared unescaped too.
    const Scanned k = scan_ok(R"({"jsonrpc":"2.0","\u0069d":5,"method":"m"})");
    CHECK(k.envelope.id_kind == IdKind::integer);
    CHECK(k.span(k.envelope.id) == "5");
}

TEST_CASE("envelope: progress tokens and their validity", "[envelope]") {
    struct Case {
        std::string token;
        bool valid;
    };
    for (const Case& c : std::vector<Case>{{"7", true},
                                           {R"("7")", true},
                                           {"12345678901234567890", true},
                                           {"1.5", true},
                                           {"-2e-3", true},
                                           {"null", false},
                                           {"true", false},
                                           {"{}", false},
                                           {"[7]", false}}) {
        DYNAMIC_SECTION("token " << c.token) {
            const Scanned s = scan_ok(
                R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":)" +
                c.token + R"(},"x":1}})");
            if (c.token.front() != '{' && c.token.front() != '[') {
                CHECK(s.span(s.envelope.progress_token) == c.token);
            }
            CHECK(s.envelope.progress_token_valid == c.valid);
        }
    }
    SECTION("notifications/progress carries it in params") {
        const Scanned s = scan_ok(
            R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"mcpd-p3","progress":1,"total":2}})");
        CHECK(s.span(s.envelope.reported_token) == R"("mcpd-p3")");
        // It is the reported token, not a request's own token to be rewritten.
        CHECK(s.envelope.progress_token.empty());
    }
}

TEST_CASE("envelope: responses, tasks and subscription ids in results", "[envelope]") {
    SECTION("a result") {
        const Scanned s = scan_ok(
            R"({"jsonrpc":"2.0","id":"q","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"},"content":[]}})");
        CHECK(s.envelope.is_response());
        CHECK(s.envelope.has_result);
        CHECK_FALSE(s.envelope.has_method);
        CHECK(s.span(s.envelope.subscription_id) == R"("sub-1")");
    }
    SECTION("an error") {
        const Scanned s =
            scan_ok(R"({"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}})");
        CHECK(s.envelope.is_response());
        CHECK(s.envelope.has_error);
        CHECK_FALSE(s.envelope.has_result);
    }
    SECTION("a 2025-11-25 CreateTaskResult") {
        const Scanned s = scan_ok(
            R"({"jsonrpc":"2.0","id":3,"result":{"task":{"status":"working","taskId":"t\"9","ttl":1}}})");
        CHECK(s.envelope.created_task_id == "t\"9");
    }
    SECTION("a 2026 task result") {
        const Scanned s =
            scan_ok(R"({"jsonrpc":"2.0","id":3,"result":{"taskId":"t-2","resultType":"task"}})");
        CHECK(s.envelope.created_task_id == "t-2");
        CHECK(s.envelope.result_type == "task");
    }
    SECTION("a taskId in an ordinary result is no created task") {
        const Scanned s =
            scan_ok(R"({"jsonrpc":"2.0","id":3,"result":{"taskId":"t-2","status":"working"}})");
        CHECK(s.envelope.created_task_id.empty());
    }
}

TEST_CASE("envelope: jsonrpc must be the string 2.0", "[envelope]") {
    CHECK(scan_ok(R"({"jsonrpc":"2.0","method":"m"})").envelope.jsonrpc_ok);
    CHECK_FALSE(scan_ok(R"({"jsonrpc":"1.0","method":"m"})").envelope.jsonrpc_ok);
    CHECK_FALSE(scan_ok(R"({"jsonrpc":2.0,"method":"m"})").envelope.jsonrpc_ok);
    CHECK_FALSE(scan_ok(R"({"jsonrpc":"2.0 ","method":"m"})").envelope.jsonrpc_ok);
    CHECK_FALSE(scan_ok(R"({"method":"m"})").envelope.jsonrpc_ok);
}

TEST_CASE("envelope: anything that is not valid JSON is not_json", "[envelope]") {
    const std::vector<std::string> bad = {
        "",
        "hello",
        R"({"jsonrpc":"2.0","id":1)",
        R"({"jsonrpc":"2.0","id":1} x)",
        R"({"jsonrpc":"2.0","id":1}{})",
        R"({"jsonrpc":"2.0","id":1},)",
        "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"\xe2\x82\"}",  // truncated UTF-8 sequence
        "{\"jsonrpc\":\"2.0\",\"method\":\"a\x01\"}",     // raw control character
        R"({"jsonrpc":"2.0","method":"a\qb"})",
        R"({"jsonrpc":"2.0","method":"m","params":{"a":[1,2,}})",
        R"({"jsonrpc":"2.0","method":"m","params":{"a":tru}})",
        R"({"jsonrpc":"2.0","method":"m","params":{"a":1.}})",
        R"({"jsonrpc":"2.0","method":"m","params":{"a":-}})",
        R"({"jsonrpc":"2.0","method":"m" "id":1})",
        R"({"jsonrpc":"2.0",method:"m"})",
    };
    for (const std::string& line : bad) {
        DYNAMIC_SECTION("line " << line) {
            CHECK(scan(line).status == ScanStatus::not_json);
        }
    }
}

TEST_CASE("envelope: strings it does not keep are checked where they lie", "[envelope]") {
    // Values mcpd only forwards (most of a tool result) are validated without being unescaped.
    const std::vector<std::string> good = {
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"plain"}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"a\"b\\c\/d\b\f\n\r\t"}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"\u00e9\u20AC \ud83d\ude00","k":["\\",""]}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"ends with a backslash \\"}})",
        // Lone surrogates are JSON's grammar, and servers emit them (a string cut mid-pair):
        // forwarded as they are.
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83d"]})",         // a high surrogate alone
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83dx\ude00"]})",  // not followed by its pair
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83d\u0041"]})",   // followed by no low surrogate
        R"({"jsonrpc":"2.0","id":1,"result":["\ude00"]})",         // a low surrogate alone
    };
    for (const std::string& line : good) {
        DYNAMIC_SECTION("good " << line) { CHECK(scan(line).status == ScanStatus::ok); }
    }
    const std::vector<std::string> bad = {
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"a\qb"}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"\u12"}})",
        // What follows a string mcpd only checks is still checked.
        R"({"jsonrpc":"2.0","id":"ab":fals"result"e}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"t":"a\"b":fals"x"e}}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"\u12g4"}})",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"a\x01\"}}",  // raw control character
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"text\":\"\xc3\x28\"}}",  // invalid UTF-8
    };
    for (const std::string& line : bad) {
        DYNAMIC_SECTION("bad " << line) { CHECK(scan(line).status == ScanStatus::not_json); }
    }
}

TEST_CASE("envelope: a padded message is scanned where it lies", "[envelope]") {
    EnvelopeScanner scanner(kMax);
    std::string buffer = R"({"jsonrpc":"2.0","id":7,"method":"m"})";
    const std::size_t size = buffer.size();
    buffer.append(kScanPadding, 'x');  // what follows a line in a reader's buffer
    Envelope e;
    REQUIRE(scanner.scan(PaddedText{std::string_view(buffer.data(), size)}, e) == ScanStatus::ok);
    CHECK(e.id.in(buffer) == "7");
    CHECK(e.method == "m");
}

TEST_CASE("splice: into pieces, copying nothing", "[envelope]") {
    const std::string text = R"({"jsonrpc":"2.0","id":"abc","result":{}})";
    const Scanned s = scan_ok(text);
    std::vector<std::string_view> pieces;
    splice(text, {{s.envelope.id, "100"}}, pieces);
    std::string joined;
    for (std::string_view piece : pieces) joined.append(piece);
    CHECK(joined == R"({"jsonrpc":"2.0","id":100,"result":{}})");
    REQUIRE(pieces.size() == 3);
    CHECK(pieces.front().data() == text.data());
    CHECK(pieces.back().data() == text.data() + s.envelope.id.offset + s.envelope.id.length);
}

TEST_CASE("envelope: invalid JSON that starts like an array or a scalar is not_json",
          "[envelope]") {
    // Garbage is a parse error (-32700), not a valid value of the wrong shape (-32600).
    for (const std::string& line : {std::string("[1,}"), std::string("[1,2"), std::string("nope"),
                                    std::string("tru"), std::string("01"), std::string("-")}) {
        DYNAMIC_SECTION("line " << line) {
            CHECK(scan(line).status == ScanStatus::not_json);
        }
    }
}

TEST_CASE("envelope: integers with leading zeros are not valid JSON", "[envelope]") {
    // RFC 8259 §6: no leading zeros. Such a line must not reach a child as "validated".
    for (const std::string& line :
         {std::string(R"({"jsonrpc":"2.0","method":"m","params":{"a":01}})"),
          std::string(R"({"jsonrpc":"2.0","id":01,"method":"m"})"),
          std::string(
              R"({"jsonrpc":"2.0","method":"m","params":{"_meta":{"progressToken":-01}}})")}) {
        DYNAMIC_SECTION("line " << line) {
            CHECK(scan(line).status == ScanStatus::not_json);
        }
    }
}

TEST_CASE("envelope: valid JSON that is not an object is not_object", "[envelope]") {
    for (const std::string& line :
         {std::string("[]"), std::string(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])"),
          std::string("5"), std::string(R"("s")"), std::string("null"), std::string("true")}) {
        DYNAMIC_SECTION("line " << line) {
            CHECK(scan(line).status == ScanStatus::not_object);
        }
    }
}

TEST_CASE("envelope: nesting is bounded", "[envelope]") {
    CHECK(scan(R"({"jsonrpc":"2.0","method":"m","params":{"deep":)" + nested(200) + "}}").status ==
          ScanStatus::ok);
    CHECK(scan(R"({"jsonrpc":"2.0","method":"m","deep":)" + nested(200) + "}").status ==
          ScanStatus::ok);
    CHECK(scan(R"({"jsonrpc":"2.0","method":"m","params":{"deep":)" + nested(300) + "}}").status ==
          ScanStatus::not_json);
    CHECK(scan(R"({"jsonrpc":"2.0","method":"m","deep":)" + nested(5000) + "}").status ==
          ScanStatus::not_json);
}

TEST_CASE("envelope: a 16 MiB message is validated and its id found", "[envelope]") {
    EnvelopeScanner scanner(kMax);
    const std::string head = R"({"jsonrpc":"2.0","method":"tools/call","params":{"data":")";
    const std::string tail = R"("},"id":"big-1"})";
    std::string text = head + std::string(kMax - head.size() - tail.size(), 'a') + tail;
    REQUIRE(text.size() == kMax);
    Envelope e;
    REQUIRE(scanner.scan(text, e) == ScanStatus::ok);
    CHECK(e.id_kind == IdKind::string);
    CHECK(e.id.in(text) == R"("big-1")");
    CHECK(e.id.offset == kMax - 8);
    CHECK(e.method == "tools/call");

    SECTION("the same scanner then takes a small message") {
        std::string small = R"({"jsonrpc":"2.0","id":2,"method":"m"})";
        REQUIRE(scanner.scan(small, e) == ScanStatus::ok);
        CHECK(e.id.in(small) == "2");
        CHECK(e.has_params == false);
    }
    SECTION("a bad byte at the end of a big message is still found") {
        text[kMax - tail.size() - 1] = '\xff';
        CHECK(scanner.scan(text, e) == ScanStatus::not_json);
    }
    SECTION("a message over the limit is refused, not crashed on") {
        text.insert(head.size(), std::string(4096, 'a'));
        CHECK(scanner.scan(text, e) != ScanStatus::ok);
    }
}

TEST_CASE("envelope: a scan resets the previous envelope", "[envelope]") {
    EnvelopeScanner scanner(1024);
    Envelope e;
    std::string first =
        R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"uri":"u","_meta":{"progressToken":null}}})";
    REQUIRE(scanner.scan(first, e) == ScanStatus::ok);
    CHECK_FALSE(e.progress_token_valid);
    std::string second = R"({"jsonrpc":"2.0","method":"n"})";
    REQUIRE(scanner.scan(second, e) == ScanStatus::ok);
    CHECK(e.id_kind == IdKind::absent);
    CHECK(e.uri.empty());
    CHECK(e.progress_token.empty());
    CHECK(e.progress_token_valid);
    CHECK(e.method == "n");
    std::string bad = "{nope";
    CHECK(scanner.scan(bad, e) == ScanStatus::not_json);
    CHECK_FALSE(scanner.error().empty());
}

TEST_CASE("splice: replacements in any order, of any length", "[envelope]") {
    const std::string text =
        R"({"jsonrpc":"2.0","id":"abc","method":"m","params":{"_meta":{"progressToken":7}}})";
    const Scanned s = scan_ok(text);
    std::string out = "stale contents";
    splice(text, {{s.envelope.progress_token, R"("mcpd-p1")"}, {s.envelope.id, "100"}}, out);
    CHECK(
        out ==
        R"({"jsonrpc":"2.0","id":100,"method":"m","params":{"_meta":{"progressToken":"mcpd-p1"}}})");
    splice(text, {{s.envelope.id, "100"}, {s.envelope.progress_token, R"("mcpd-p1")"}}, out);
    CHECK(
        out ==
        R"({"jsonrpc":"2.0","id":100,"method":"m","params":{"_meta":{"progressToken":"mcpd-p1"}}})");
    // Back again: the original bytes.
    std::string back;
    const Scanned r = scan_ok(out);
    splice(out, {{r.envelope.id, s.span(s.envelope.id)}, {r.envelope.progress_token, "7"}}, back);
    CHECK(back == text);
}

TEST_CASE("splice: edges", "[envelope]") {
    std::string out;
    splice("abcdef", Replacements{}, out);
    CHECK(out == "abcdef");
    splice("abcdef", {{Span{0, 1}, "X"}, {Span{5, 1}, "YZ"}, {Span{2, 2}, ""}}, out);
    CHECK(out == "XbeYZ");
    splice("abcdef", {{Span{3, 0}, "--"}}, out);
    CHECK(out == "abc--def");
    // A removal whose text has no data at all (a group's prefix), into a longer string reused.
    splice("abcdef", {{Span{0, 2}, std::string_view()}}, out);
    CHECK(out == "cdef");
    splice("", Replacements{}, out);
    CHECK(out.empty());
}

TEST_CASE("unquoted: strips the quotes of a string token only", "[envelope]") {
    CHECK(unquoted(R"("abc")") == "abc");
    CHECK(unquoted(R"("")") == "");
    CHECK(unquoted("17") == "17");
    CHECK(unquoted(R"(")") == R"(")");
    CHECK(unquoted(R"("a\"b")") == R"(a\"b)");
}

TEST_CASE("envelope: by-position params are noted, an object's are not", "[envelope]") {
    CHECK(scan_ok(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]})").envelope.params_array);
    CHECK_FALSE(scan_ok(R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{}})").envelope.params_array);
    CHECK_FALSE(scan_ok(R"({"jsonrpc":"2.0","id":1,"method":"ping"})").envelope.params_array);
}

TEST_CASE("envelope: after_splice reads the spliced text as a new scan does", "[envelope]") {
    const std::string line =
        R"({"jsonrpc":"2.0","id":"client-7","method":"tools/call","params":{"name":"dev__echo","_meta":{"progressToken":"p"},"arguments":{}}})";
    const Scanned s = scan_ok(line);
    Envelope moved = s.envelope;
    const Replacements changes{{s.envelope.id, "123456"},
                               {s.envelope.name, R"("echo")"},
                               {s.envelope.progress_token, R"("mcpd-p1")"}};
    std::string spliced;
    splice(line, changes, spliced);
    moved.after_splice(std::span<const Replacement>(changes.data(), changes.size()));
    const Scanned again = scan_ok(spliced);
    CHECK(moved == again.envelope);
    CHECK(moved.id_kind == IdKind::integer);
    CHECK(moved.name.in(spliced) == R"("echo")");
    CHECK(moved.progress_token.in(spliced) == R"("mcpd-p1")");
}

TEST_CASE("envelope: after_splice follows a change made inside a field's token", "[envelope]") {
    const std::string line =
        R"({"jsonrpc":"2.0","id":"client-7","method":"tools/call","params":{"name":"dev__echo","_meta":{"progressToken":"p"}}})";
    const Scanned s = scan_ok(line);
    Envelope moved = s.envelope;
    // A group's prefix taken out of the name, the name's quotes kept, and the id before it.
    const Span prefix{s.envelope.name.offset + 1, 5};
    REQUIRE(prefix.in(line) == "dev__");
    const Replacements changes{{s.envelope.id, "42"}, {prefix, ""}};
    std::string spliced;
    splice(line, changes, spliced);
    moved.after_splice(std::span<const Replacement>(changes.data(), changes.size()));
    const Scanned again = scan_ok(spliced);
    CHECK(moved == again.envelope);
    CHECK(moved.name.in(spliced) == R"("echo")");
    CHECK(moved.progress_token.in(spliced) == R"("p")");
}
