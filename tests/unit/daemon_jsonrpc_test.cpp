// daemon/jsonrpc: the messages mcpd writes itself, byte for byte, ids copied as they were sent.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "daemon/mux/jsonrpc.h"

using namespace mcpd;

TEST_CASE("jsonrpc: answers copy the request's id bytes", "[jsonrpc]") {
    CHECK(jsonrpc::result(R"("a\u0062")", "{}") ==
          R"({"jsonrpc":"2.0","id":"a\u0062","result":{}})");
    CHECK(jsonrpc::error("7", jsonrpc::kMethodNotFound, "no \"x\"") ==
          R"({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no \"x\""}})");
    CHECK(
        jsonrpc::error({}, jsonrpc::kParseError, "parse error", "bad byte") ==
        R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error","data":{"reason":"bad byte"}}})");
}

TEST_CASE("jsonrpc: notifications, with and without params", "[jsonrpc]") {
    CHECK(jsonrpc::notification("notifications/initialized") ==
          R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
    CHECK(jsonrpc::notification("notifications/progress", R"({"progress":1})") ==
          R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})");
    CHECK(jsonrpc::list_changed("tools") ==
          R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
}

TEST_CASE("jsonrpc: cancelled names the request by its raw id or by mcpd's own", "[jsonrpc]") {
    // The bytes the router writes today (router.cpp), so adopting the builder changes nothing.
    CHECK(
        jsonrpc::cancelled(std::uint64_t{42}, "the client session disconnected") ==
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":42,"reason":"the client session disconnected"}})");
    CHECK(
        jsonrpc::cancelled(R"("s-\u00fc-1")", "the server restarted") ==
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s-\u00fc-1","reason":"the server restarted"}})");
    CHECK(
        jsonrpc::cancelled(std::uint64_t{7}, "request_timeout") ==
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"request_timeout"}})");
    // A reason is quoted as JSON: it never breaks the line.
    const nlohmann::json parsed =
        nlohmann::json::parse(jsonrpc::cancelled(std::uint64_t{1}, "a \"quoted\"\nreason"));
    CHECK(parsed["params"]["reason"] == "a \"quoted\"\nreason");
}

TEST_CASE("jsonrpc: quote writes a JSON string, escaping what must be and replacing bad UTF-8",
          "[jsonrpc]") {
    CHECK(mcpd::jsonrpc::quote("echo") == R"("echo")");
    CHECK(mcpd::jsonrpc::quote("") == R"("")");
    CHECK(mcpd::jsonrpc::quote("a b~") == R"("a b~")");
    CHECK(mcpd::jsonrpc::quote("a\"b\\c") == R"("a\"b\\c")");
    CHECK(mcpd::jsonrpc::quote("tab\there\n") == R"("tab\there\n")");
    CHECK(mcpd::jsonrpc::quote(std::string_view("nul\0", 4)) == R"("nul\u0000")");
    CHECK(mcpd::jsonrpc::quote("\x7f") == "\"\x7f\"");
    CHECK(mcpd::jsonrpc::quote("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
    CHECK(mcpd::jsonrpc::quote("bad\xff") == "\"bad\xef\xbf\xbd\"");  // U+FFFD
}

TEST_CASE("jsonrpc: an id mcpd gave is read back whole, and nothing else is",
          "[jsonrpc]") {
    CHECK(jsonrpc::given_id("0") == 0U);
    CHECK(jsonrpc::given_id("42") == 42U);
    CHECK(jsonrpc::given_id("007") == 7U);
    CHECK(jsonrpc::given_id("18446744073709551615") == std::uint64_t{18446744073709551615U});
    // Anything else names no id of mcpd's: over the range, signed, quoted, cut or padded.
    for (const char* raw : {"18446744073709551616", "99999999999999999999", "-1", "+1", "",
                            "\"1\"", "1a", " 1", "1 ", "1.0", "1e3", "0x10",
                            "000000000000000000001", "1844674407370955161a"}) {
        INFO(raw);
        CHECK_FALSE(jsonrpc::given_id(raw).has_value());
    }
}
