// Building the few JSON-RPC messages mcpd writes itself (errors, local answers, the
// notifications it sends on a client's or a server's behalf), with ids copied byte for byte.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mcpd::jsonrpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
// 2026-07-28: a request's _meta names a revision the server does not support.
inline constexpr int kUnsupportedProtocolVersion = -32022;

// {"jsonrpc":"2.0","id":<raw_id>,"result":<result_json>}
std::string result(std::string_view raw_id, std::string_view result_json);

// {"jsonrpc":"2.0","id":<raw_id or null>,"error":{"code":..,"message":..[,"data":{"reason":..}]}}
std::string error(std::string_view raw_id, int code, std::string_view message,
                  std::string_view reason = {});
// The same with "outcome" in data beside the reason: "unknown" tells a client that the
// request may have run (replay after a crash, docs/MULTIPLEXING.md).
std::string error_with_outcome(std::string_view raw_id, int code, std::string_view message,
                               std::string_view reason, std::string_view outcome);

// {"jsonrpc":"2.0","method":<method>}: a notification without params.
std::string notification(std::string_view method);
// {"jsonrpc":"2.0","method":<method>,"params":<params_json>}
std::string notification(std::string_view method, std::string_view params_json);

// {"jsonrpc":"2.0","method":"notifications/<list>/list_changed"}, `list` one of tools, prompts,
// resources.
std::string list_changed(std::string_view list);

// {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":<id>,"reason":..}}:
// the request `raw_request_id` (its bytes as sent) or `request_id` (an id mcpd chose) is
// abandoned, for `reason`.
std::string cancelled(std::string_view raw_request_id, std::string_view reason);
std::string cancelled(std::uint64_t request_id, std::string_view reason);

// A JSON string literal (quotes included) for `text`.
std::string quote(std::string_view text);

// An id mcpd gave (to a child, a member session or a client): the raw token as the unsigned
// integer it was written as (at most twenty decimal digits); nothing for any other token. Read
// in line, for every answer a child sends.
inline std::optional<std::uint64_t> given_id(std::string_view raw) {
    // Nineteen digits never overflow; a twentieth is checked.
    if (raw.empty() || raw.size() > 20) return std::nullopt;
    std::uint64_t value = 0;
    const std::size_t unchecked = raw.size() < 20 ? raw.size() : 19;
    for (std::size_t i = 0; i < unchecked; ++i) {
        const auto digit = static_cast<unsigned>(static_cast<unsigned char>(raw[i]) - '0');
        if (digit > 9) return std::nullopt;
        value = value * 10 + digit;
    }
    if (unchecked == raw.size()) return value;
    const auto last = static_cast<unsigned>(static_cast<unsigned char>(raw[19]) - '0');
    if (last > 9 || __builtin_mul_overflow(value, 10U, &value) ||
        __builtin_add_overflow(value, last, &value))
        return std::nullopt;
    return value;
}
// The other way: an id mcpd gives, written in decimal into `digits` (no allocation, for the
// ids spliced into every forwarded request).
inline std::string_view id_text(std::uint64_t id, char (&digits)[24]) {
    const auto end = std::to_chars(digits, digits + sizeof digits, id).ptr;
    return {digits, static_cast<std::size_t>(end - digits)};
}

}  // namespace mcpd::jsonrpc
