// The request metadata headers of the 2026-07-28 Streamable HTTP transport: MCP-Protocol-Version,
// Mcp-Method and Mcp-Name mirror the body, so that what a proxy routes on is what mcpd runs.
// Pure: a mismatch is the sentence of the HeaderMismatch (-32020) error a 400 carries.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "daemon/control/http_message.h"

namespace mcpd {

inline constexpr int kHeaderMismatch = -32020;

// Which era a request to /mcp/NAME belongs to, by its MCP-Protocol-Version header: the
// sessions of 2025-03-26 to 2025-11-25 (also a request without the header, as the spec lets a
// server assume 2025-03-26), the stateless 2026-07-28, or a revision mcpd does not serve.
enum class HttpEra { session, stateless, unsupported };
HttpEra http_era(std::optional<std::string_view> protocol_version);

// A header value as the client meant it: "=?base64?B64?=" (standard Base64 of UTF-8) decoded,
// any other value as it is. Nothing when the sentinel holds no valid Base64.
std::optional<std::string> decode_header_value(std::string_view value);

// Whether `head` mirrors `message` (one JSON-RPC request or notification of the modern era):
// MCP-Protocol-Version equal to the body's _meta "io.modelcontextprotocol/protocolVersion",
// Mcp-Method to its method, and for tools/call, prompts/get and resources/read Mcp-Name to
// params.name or params.uri. The failure says which header and what it should be.
Result<Done> check_modern_headers(const HttpRequestHead& head, const nlohmann::json& message);

}  // namespace mcpd
