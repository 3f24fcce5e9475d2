#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/json_envelope.h"
#include "common/plain_envelope.h"

using mcpd::wire::Envelope;
using mcpd::wire::EnvelopeScanner;
using mcpd::wire::IdKind;
using mcpd::wire::PaddedText;
using mcpd::wire::ScanStatus;

namespace {

// The plain pass over a copy of `line` with the padding it may read past a clean message.
bool scan_plain(const std::string& line, Envelope& e) {
    std::string text = line;
    text.reserve(text.size() + mcpd::wire::kScanPadding);
    return mcpd::wire::scan_plain(PaddedText{text}, e);
}

// The general scanner's reading of `line` (simdjson only).
Envelope general_reading(const std::string& line, ScanStatus& status) {
    static EnvelopeScanner general(16 * 1024 * 1024, EnvelopeScanner::Path::general_only);
    std::string text = line;
    Envelope e;
    status = general.scan(text, e);
    return e;
}

// The plain pass takes `line` and reads exactly what the general scanner reads.
void require_plain_agrees(const std::string& line) {
    INFO(line);
    Envelope plain;
    REQUIRE(scan_plain(line, plain));
    ScanStatus status{};
    const Envelope full = general_reading(line, status);
    REQUIRE(status == ScanStatus::ok);
    CHECK(plain == full);
}

}  // namespace

TEST_CASE("plain envelope: ordinary messages are read in the plain pass, as simdjson reads them",
          "[envelope]") {
    for (const std::string line : {
             R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}})",
             R"( {"jsonrpc" : "2.0", "id" : "a\"b", "method" : "ping"} )",
             R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})",
             R"({"jsonrpc":"2.0","id":3,"error":{"code":99999999999999999999,"message":"big"}})",
             R"({"jsonrpc":"2.0","id":3,"error":{"code":"x","message":7}})",
             R"({"jsonrpc":"2.0","id":-12,"result":{"content":[{"type":"text","text":"caf\u00e9 ☕ 𝄞\n"}],"isError":true}})",
             R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-1","progress":5,"total":10}})",
             R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42,"reason":"user"}})",
             R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":9,"io.modelcontextprotocol/related-task":{"taskId":"t7"}}}})",
             R"({"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"s1"},"resultType":"task","taskId":"flat"}})",
             R"({"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"nested","status":"working"},"status":"working"}})",
             R"({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///tmp/\u0041.txt"}})",
             R"({"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}})",
             R"({"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"t","elicitationId":"e","status":"s"}})",
             R"({"jsonrpc":"2.0","id":2,"method":"x","params":[1,"two",[],{}]})",
             R"({"jsonrpc":"1.0","id":0,"method":"x","params":{},"extra":[true,false,null,{"a":[[]]}]})",
             R"({"jsonrpc":"2.0","id":"\ud83d","method":"lone surrogate id"})",
             R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","task":{"ttl":1000},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{}}}}})",
             R"({})",
         }) {
        require_plain_agrees(line);
    }
}

TEST_CASE("plain envelope: the fields it reads", "[envelope]") {
    const std::string line =
        R"({"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{"name":"echo","_meta":{"progressToken":"p"}}})";
    Envelope e;
    REQUIRE(scan_plain(line, e));
    CHECK(e.jsonrpc_ok);
    CHECK(e.id_kind == IdKind::string);
    CHECK(e.id.in(line) == R"("r-1")");
    CHECK(e.method == "tools/call");
    CHECK(e.name.in(line) == R"("echo")");
    CHECK(e.progress_token.in(line) == R"("p")");
    CHECK(e.is_request());
    CHECK_FALSE(e.params_task);
    CHECK_FALSE(e.meta_client_capabilities);

    const std::string tasked =
        R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}})";
    REQUIRE(scan_plain(tasked, e));
    CHECK(e.params_task);
    CHECK(e.meta_client_capabilities);
}

TEST_CASE("plain envelope: anything unusual is left to simdjson, which still decides it",
          "[envelope]") {
    struct Case {
        std::string line;
        ScanStatus general;
    };
    for (const Case& c : std::initializer_list<Case>{
             {R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"v":1.5}})", ScanStatus::ok},
             {R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"v":1e400}})", ScanStatus::not_json},
             {R"({"jsonrpc":"2.0","id":1,"id":2,"method":"x"})", ScanStatus::ok},  // repeated id
             {R"({"jsonrpc":"2.0","i\u0064":1,"method":"x"})", ScanStatus::ok},    // escaped key
             {R"({"jsonrpc":"2.0","id":true,"method":"x"})", ScanStatus::ok},
             {R"({"jsonrpc":"2.0","id":1,"method":7})", ScanStatus::ok},
             {R"({"jsonrpc":"2.0","id":1,"method":"x","params":"p"})", ScanStatus::ok},
             {R"({"jsonrpc":"2.0","id":1,"result":{"isError":"yes"}})", ScanStatus::ok},
             {R"({"jsonrpc":"2.0","id":1,"result":{"taskId":"a","resultType":"task","task":{"taskId":"b"}}})",
              ScanStatus::ok},
             {R"({"jsonrpc":"2.0","id":1,"method":"x",})", ScanStatus::not_json},
             {R"({"jsonrpc":"2.0","id":01,"method":"x"})", ScanStatus::not_json},
             {R"({"jsonrpc":"2.0","id":1,"method":"a\qb"})", ScanStatus::not_json},
             {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tab\there\"}", ScanStatus::not_json},
             {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xc0\xaf\"}", ScanStatus::not_json},  // overlong
             {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xed\xa0\x80\"}", ScanStatus::not_json},  // surrogate
             {R"({"jsonrpc":"2.0","id":1} x)", ScanStatus::not_json},
             {R"([{"jsonrpc":"2.0","id":1,"method":"x"}])", ScanStatus::not_object},
             {std::string(40, '[') + std::string(40, ']'), ScanStatus::not_object},
             {R"({"a":)" + std::string(40, '[') + std::string(40, ']') + "}", ScanStatus::ok},
             {R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"t":")" + std::string(20000, 'x') + R"("}})",
              ScanStatus::ok},
         }) {
        INFO(c.line.substr(0, 200));
        Envelope plain;
        CHECK_FALSE(scan_plain(c.line, plain));
        ScanStatus status{};
        general_reading(c.line, status);
        CHECK(status == c.general);
        // The scanner that tries the plain pass first gives the general answer.
        EnvelopeScanner both(16 * 1024 * 1024);
        std::string text = c.line;
        Envelope e;
        CHECK(both.scan(text, e) == c.general);
    }
}

TEST_CASE("plain envelope: every prefix of a message is refused or agrees", "[envelope]") {
    const std::string line =
        R"({"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"a\\b\"c ✓"}],"_meta":{"progressToken":1}}})";
    for (std::size_t n = 0; n <= line.size(); ++n) {
        const std::string prefix = line.substr(0, n);
        Envelope plain;
        if (!scan_plain(prefix, plain)) continue;
        ScanStatus status{};
        const Envelope full = general_reading(prefix, status);
        INFO(prefix);
        REQUIRE(status == ScanStatus::ok);
        CHECK(plain == full);
    }
}

TEST_CASE("plain envelope: what lies in the padding after a message changes nothing",
          "[envelope]") {
    for (const std::string& line : std::initializer_list<std::string>{
             R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a b  c "}]}})",
             R"({"jsonrpc":"2.0","id":"x y","method":"tools/call","params":{"name":"n m"}})",
             R"({"jsonrpc":"2.0","id":1, "method":"x"})",
             R"({"jsonrpc":"2.0","id":1,"method":"x","params":{"long":")" + std::string(300, 'q') +
                 R"(","k":[1,2,3]}})",
         }) {
        require_plain_agrees(line);
        // Quotes, spaces and backslashes where the strings' search runs past the end.
        std::string text = line;
        for (int i = 0; i < 128; ++i) text += "\" \\}"[i % 4];
        Envelope from_padding;
        REQUIRE(mcpd::wire::scan_plain(PaddedText{std::string_view(text).substr(0, line.size())},
                                       from_padding));
        Envelope plain;
        REQUIRE(scan_plain(line, plain));
        CHECK(from_padding == plain);
    }
    // A line cut short in a string, or with a string left open, is not read by the plain pass
    // whatever follows it.
    for (const std::string& line : {std::string(R"({"jsonrpc":"2.0","id":1,"method":"x)"),
                                   std::string(R"({"jsonrpc":"2.0","id":1,"method":"x"})") + "\"",
                                   std::string(R"({"jsonrpc":"2.0","id":1,"method":x"y"})")}) {
        INFO(line);
        // The padding holds what would complete the message.
        std::string text = line + "\"}\"}}}" + std::string(64, ' ');
        Envelope plain;
        CHECK_FALSE(mcpd::wire::scan_plain(
            PaddedText{std::string_view(text).substr(0, line.size())}, plain));
    }
    // Spaces after the message, then the end: the search for more stops at the end.
    std::string spaced = R"({"jsonrpc":"2.0","id":1,"method":"x"}   )";
    const std::size_t size = spaced.size();
    spaced += std::string(64, ' ');
    Envelope e;
    CHECK(mcpd::wire::scan_plain(PaddedText{std::string_view(spaced).substr(0, size)}, e));
}

TEST_CASE("plain envelope: a key one byte away from a field's name is another key", "[envelope]") {
    // Keys are compared eight bytes at a time: each near miss, at every length around the
    // names', in every object whose keys are read, must be read as an unknown key.
    for (const std::string key : {"i", "ie", "idd", "d", "metho", "methox", "methods", "param",
                                  "paramS", "resulT", "erro", "errorr", "jsonrpC", "jsonrpcc",
                                  "_met", "_metA", "name\u00e9", "progressTokeN", "progressToken_",
                                  "requestI", "taskI", "uRi", "io.modelcontextprotocol/subscriptionIx",
                                  "io.modelcontextprotocol/related-tasK", "isErroR", "resultTypE"}) {
        const std::string top = R"({"jsonrpc":"2.0","id":1,")" + key + R"(":"v","method":"m"})";
        const std::string in_params =
            R"({"jsonrpc":"2.0","id":1,"method":"m","params":{")" + key + R"(":"v","_meta":{")" +
            key + R"(":7}}})";
        const std::string in_result =
            R"({"jsonrpc":"2.0","id":1,"result":{")" + key + R"(":"v","_meta":{")" + key + R"(":7}}})";
        for (const std::string& line : {top, in_params, in_result}) {
            require_plain_agrees(line);
            Envelope e;
            REQUIRE(scan_plain(line, e));
            CHECK(e.name.empty());
            CHECK(e.progress_token.empty());
            CHECK(e.subscription_id.empty());
            CHECK(e.request_id.empty());
            CHECK(e.task_id.empty());
            CHECK(e.result_type.empty());
        }
    }
}

TEST_CASE("plain envelope: a number or literal ends at the message's end, whatever follows",
          "[envelope]") {
    // The padding holds digits and letters that would extend the last token if it were read
    // as part of it.
    for (const std::string& line : {std::string(R"({"jsonrpc":"2.0","id":12)"),
                                   std::string(R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"v":tru)"),
                                   std::string(R"({"jsonrpc":"2.0","id":-)")}) {
        INFO(line);
        const std::string text = line + "345e}}}" + std::string(64, '7');
        Envelope plain;
        CHECK_FALSE(mcpd::wire::scan_plain(PaddedText{std::string_view(text).substr(0, line.size())},
                                           plain));
    }
    for (const std::string id : {"0", "-0", "7", "-12345678901234567890", "null"}) {
        const std::string line = R"({"jsonrpc":"2.0","id":)" + id + "}";
        require_plain_agrees(line);
        Envelope e;
        REQUIRE(scan_plain(line, e));
        CHECK(e.id.in(line) == id);
        CHECK(e.id_kind == (id == "null" ? IdKind::null : IdKind::integer));
    }
    for (const std::string bad : {"-01", "00", "1x", "truex", "nul", "--1", "+1"}) {
        const std::string line = R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"v":)" + bad + "}}";
        INFO(line);
        Envelope plain;
        CHECK_FALSE(scan_plain(line, plain));
    }
}
