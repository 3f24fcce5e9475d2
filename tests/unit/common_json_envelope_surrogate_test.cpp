// The envelope scanner and lone UTF-16 surrogate escapes: "\ud83d" with no low half after it,
// or "\udc00" alone, is valid JSON grammar, and JavaScript and Python servers write it when
// they cut a string mid-pair. The scanner accepts it wherever it appears and leaves the bytes
// alone; the strings it keeps hold U+FFFD instead. Also the fields the router reads to judge
// an answer (the error object, a task's status, an elicitation's id).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/json_envelope.h"

using namespace mcpd::wire;

namespace {

constexpr std::size_t kMax = 16 * 1024 * 1024;
const std::string kReplacement = "\xef\xbf\xbd";  // U+FFFD in UTF-8

struct Scanned {
    ScanStatus status;
    Envelope envelope;
    std::string text;
};

Scanned scan(const std::string& line) {
    static EnvelopeScanner scanner(kMax);
    Scanned out{ScanStatus::ok, {}, line};
    out.status = scanner.scan(out.text, out.envelope);
    INFO(line << " -> " << scanner.error());
    CHECK(out.text == line);
    return out;
}

Scanned scan_ok(const std::string& line) {
    Scanned s = scan(line);
    INFO(line);
    REQUIRE(s.status == ScanStatus::ok);
    return s;
}

}  // namespace

TEST_CASE("envelope surrogates: lone halves in strings it only checks are accepted", "[envelope]") {
    const std::vector<std::string> good = {
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83d"]})",         // a high surrogate alone
        R"({"jsonrpc":"2.0","id":1,"result":["\ude00"]})",         // a low surrogate alone
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83dx\ude00"]})",  // both, apart
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83d\u0041"]})",   // a high one, then no low one
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83d\ud83d\ude00"]})",  // a pair after a lone one
        R"({"jsonrpc":"2.0","id":1,"result":["\ude00\ud83d"]})",        // the halves swapped
        R"({"jsonrpc":"2.0","id":1,"result":{"text":"ends cut \udbff"}})",
        R"({"jsonrpc":"2.0","id":1,"result":{"\ud83d":1,"k\udc00y":{"\udfff":[]}}})",  // keys
        R"({"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x\ud800","data":"\udc00"}})",
        R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"\ud800":"\ud800"}}})",
    };
    for (const std::string& line : good) {
        DYNAMIC_SECTION("good " << line) {
            scan_ok(line);
        }
    }
}

TEST_CASE("envelope surrogates: lone halves in the envelope's own fields are accepted",
          "[envelope]") {
    SECTION("in a string id, kept as its bytes") {
        const Scanned s = scan_ok(R"({"jsonrpc":"2.0","id":"a\ud83d","method":"m"})");
        CHECK(s.envelope.id_kind == IdKind::string);
        CHECK(s.envelope.id.in(s.text) == R"("a\ud83d")");
    }
    SECTION("in the strings it keeps, as U+FFFD") {
        const Scanned s = scan_ok(
            R"({"jsonrpc":"2.0","id":1,"method":"x/\ud83d","params":{"uri":"file:///\udc00","taskId":"t\ud83d","elicitationId":"e\ud800","_meta":{"progressToken":"p\ud83d","io.modelcontextprotocol/related-task":{"taskId":"r\udc00"}}}})");
        const Envelope& e = s.envelope;
        CHECK(e.method == "x/" + kReplacement);
        CHECK(e.uri == "file:///" + kReplacement);
        CHECK(e.task_id == "t" + kReplacement);
        CHECK(e.elicitation_id == "e" + kReplacement);
        CHECK(e.progress_token.in(s.text) == R"("p\ud83d")");
        CHECK(e.related_task_id.in(s.text) == R"("r\udc00")");
    }
    SECTION("in a result's task id") {
        const Scanned s = scan_ok(
            R"({"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t\ud83d","status":"working"}}})");
        CHECK(s.envelope.created_task_id == "t" + kReplacement);
    }
    SECTION("in escaped keys it reads") {
        // "\u0069d" is "id"; a lone surrogate in another key must not hide it.
        const Scanned s = scan_ok(
            R"({"jsonrpc":"2.0","\u0069d":7,"x\ud83d":1,"method":"m","params":{"\ud800":2,"\u0075ri":"u"}})");
        CHECK(s.envelope.id.in(s.text) == "7");
        CHECK(s.envelope.uri == "u");
    }
    SECTION("as a whole string that is not an object") {
        CHECK(scan(R"("\ud83d")").status == ScanStatus::not_object);
        CHECK(scan(R"(["\udc00"])").status == ScanStatus::not_object);
    }
}

TEST_CASE("envelope surrogates: pairs still decode to their code point", "[envelope]") {
    const Scanned s = scan_ok(R"({"jsonrpc":"2.0","id":1,"method":"\ud83d\ude00 \u00e9\n"})");
    CHECK(s.envelope.method == "\xf0\x9f\x98\x80 \xc3\xa9\n");
}

TEST_CASE("envelope surrogates: escapes that are not JSON are still refused", "[envelope]") {
    const std::vector<std::string> bad = {
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83"]})",
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83d\u12"]})",
        R"({"jsonrpc":"2.0","id":1,"result":["\ud83d\x"]})",
        R"({"jsonrpc":"2.0","id":1,"result":{"\ud8g0":1}})",
        R"({"jsonrpc":"2.0","id":1,"method":"a\q"})",
        R"({"jsonrpc":"2.0","\u00":1})",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[\"\xed\xa0\xbd\"]}",  // a surrogate as raw bytes
    };
    for (const std::string& line : bad) {
        DYNAMIC_SECTION("bad " << line) {
            CHECK(scan(line).status == ScanStatus::not_json);
        }
    }
}

TEST_CASE("envelope surrogates: decode_string", "[envelope]") {
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

TEST_CASE("envelope surrogates: without_lone_surrogates makes text nlohmann can read",
          "[envelope]") {
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

TEST_CASE("envelope: the error object's shape and code", "[envelope]") {
    SECTION("well formed") {
        const Scanned s = scan_ok(
            R"({"jsonrpc":"2.0","id":1,"error":{"data":{"code":"x"},"message":"m","code":-32042}})");
        CHECK(s.envelope.error_valid);
        CHECK(s.envelope.error_code == -32042);
    }
    const std::vector<std::string> malformed = {
        R"({"jsonrpc":"2.0","id":1,"error":"boom"})",
        R"({"jsonrpc":"2.0","id":1,"error":null})",
        R"({"jsonrpc":"2.0","id":1,"error":{"message":"m"}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":1}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":1.0,"message":"m"}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":2}})",
        R"({"jsonrpc":"2.0","id":1,"error":{"code":123456789012345678901234,"message":"m"}})",
    };
    for (const std::string& line : malformed) {
        DYNAMIC_SECTION("malformed " << line) {
            const Scanned s = scan_ok(line);
            CHECK(s.envelope.has_error);
            CHECK_FALSE(s.envelope.error_valid);
        }
    }
}

TEST_CASE("envelope: a result's shape and a task's status", "[envelope]") {
    CHECK(scan_ok(R"({"jsonrpc":"2.0","id":1,"result":{}})").envelope.result_object);
    CHECK_FALSE(scan_ok(R"({"jsonrpc":"2.0","id":1,"result":[]})").envelope.result_object);
    CHECK_FALSE(scan_ok(R"({"jsonrpc":"2.0","id":1,"result":null})").envelope.result_object);
    CHECK(scan_ok(R"({"jsonrpc":"2.0","id":1,"result":{"taskId":"t","status":"completed"}})")
              .envelope.status == "completed");
    CHECK(
        scan_ok(
            R"({"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"t","status":"failed"}})")
            .envelope.status == "failed");
}
