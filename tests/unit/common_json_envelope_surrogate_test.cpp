// The envelope scanner and lone UTF-16 surrogate escapes: "\ud83d" with no low half after it,
// or "\udc00" alone, is valid JSON grammar, and JavaScript and Python servers write it when
// they cut a string mid-pair. The scanner accepts it wherever it appears and leaves the bytes
// alone; the strings it keeps hold U+FFFD instead. Also the fields the router reads to judge
// an answer (the error object, a task's status, an elicitation's id).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/json_envelope.h"
#include "envelope_scan.h"
#include "replacement_char.h"

using namespace mcpd::wire;
using mcpd::testing::scan;
using mcpd::testing::scan_ok;
using mcpd::testing::Scanned;

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
