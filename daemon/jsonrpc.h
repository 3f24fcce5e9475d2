// Building the few JSON-RPC messages mcpd writes itself (errors, local answers), with the
// request's id copied byte for byte.
#pragma once

#include <string>
#include <string_view>

namespace mcpd::jsonrpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;

// {"jsonrpc":"2.0","id":<raw_id>,"result":<result_json>}
std::string result(std::string_view raw_id, std::string_view result_json);

// {"jsonrpc":"2.0","id":<raw_id or null>,"error":{"code":..,"message":..[,"data":{"reason":..}]}}
std::string error(std::string_view raw_id, int code, std::string_view message,
                  std::string_view reason = {});

// A JSON string literal (quotes included) for `text`.
std::string quote(std::string_view text);

}  // namespace mcpd::jsonrpc
