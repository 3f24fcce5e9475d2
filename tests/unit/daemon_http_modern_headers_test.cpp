// The 2026-07-28 request metadata headers: each one mirrors the body, or the request is refused.
#include <catch2/catch.hpp>

#include "daemon/http/modern_headers.h"

using mcpd::check_modern_headers;
using mcpd::decode_header_value;
using nlohmann::json;

namespace {

mcpd::HttpRequestHead modern_head(const std::string& extra) {
    const auto head = mcpd::parse_request_head("POST /mcp/demo HTTP/1.1\r\nHost: localhost\r\n" + extra + "\r\n");
    REQUIRE(head.ok());
    return head.value();
}

json modern_call(const std::string& tool) {
    return {{"jsonrpc", "2.0"},
            {"id", 1},
            {"method", "tools/call"},
            {"params",
             {{"name", tool},
              {"arguments", json::object()},
              {"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}}};
}

}  // namespace

TEST_CASE("modern headers that mirror the body pass", "[modern-headers]") {
    const std::string good = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n";
    CHECK(check_modern_headers(modern_head(good), modern_call("echo")).ok());
    // A name sent in the Base64 sentinel form is compared decoded.
    const std::string encoded =
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: =?base64?SGVsbG8sIOS4lueVjA==?=\r\n";
    CHECK(check_modern_headers(modern_head(encoded), modern_call("Hello, \xe4\xb8\x96\xe7\x95\x8c")).ok());
    // A list needs no Mcp-Name.
    json list = {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"},
                 {"params", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}}};
    CHECK(check_modern_headers(modern_head("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"), list).ok());
}

TEST_CASE("a missing or different modern header is a HeaderMismatch naming it", "[modern-headers]") {
    const auto refused = [](const std::string& headers, const json& body) {
        const auto result = check_modern_headers(modern_head(headers), body);
        REQUIRE_FALSE(result.ok());
        return result.error();
    };
    CHECK(refused("Mcp-Method: tools/call\r\nMcp-Name: echo\r\n", modern_call("echo")).find("MCP-Protocol-Version is missing") != std::string::npos);
    CHECK(refused("MCP-Protocol-Version: 2025-06-18\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n", modern_call("echo"))
              .find("MCP-Protocol-Version") != std::string::npos);
    CHECK(refused("MCP-Protocol-Version: 2026-07-28\r\nMcp-Name: echo\r\n", modern_call("echo")).find("Mcp-Method is missing") != std::string::npos);
    CHECK(refused("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nMcp-Name: echo\r\n", modern_call("echo"))
              .find("Mcp-Method value does not match") != std::string::npos);
    CHECK(refused("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n", modern_call("echo")).find("Mcp-Name is missing") != std::string::npos);
    // What a proxy routes on must be what runs: another tool's name is refused.
    CHECK(refused("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: safe_tool\r\n", modern_call("delete_all"))
              .find("\"delete_all\"") != std::string::npos);
    CHECK(refused("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: =?base64?!!!?=\r\n", modern_call("echo"))
              .find("does not decode") != std::string::npos);
}

TEST_CASE("the Base64 sentinel of a header value", "[modern-headers]") {
    CHECK(decode_header_value("us-west1") == "us-west1");
    CHECK(decode_header_value("=?base64?IHBhZGRlZCA=?=") == " padded ");
    CHECK(decode_header_value("=?base64?bGluZTEKbGluZTI=?=") == "line1\nline2");
    CHECK(decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=") == "=?base64?literal?=");
    CHECK_FALSE(decode_header_value("=?base64?a-b_?=").has_value());
    CHECK_FALSE(decode_header_value("=?base64?!?=").has_value());
}

TEST_CASE("a request's era is read from its MCP-Protocol-Version", "[modern-headers]") {
    using mcpd::HttpEra;
    using mcpd::http_era;
    CHECK(http_era(std::nullopt) == HttpEra::session);  // 2025-03-26 clients send none
    CHECK(http_era("2025-03-26") == HttpEra::session);
    CHECK(http_era("2025-06-18") == HttpEra::session);
    CHECK(http_era("2025-11-25") == HttpEra::session);
    CHECK(http_era("2026-07-28") == HttpEra::stateless);
    CHECK(http_era("2027-01-01") == HttpEra::unsupported);
    CHECK(http_era("") == HttpEra::unsupported);
    CHECK(http_era("2026-07-28 ") == HttpEra::unsupported);
}
