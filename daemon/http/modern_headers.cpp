#include "daemon/http/modern_headers.h"

#include "common/base64url.h"
#include "daemon/mux/mcp_versions.h"

namespace mcpd {

namespace {

constexpr std::string_view kSentinelStart = "=?base64?";
constexpr std::string_view kSentinelEnd = "?=";

// A value of the body for a sentence: cut short, so a long name cannot fill the answer.
std::string header_shown(std::string_view text) {
    constexpr std::size_t kMost = 128;
    std::string out(text.substr(0, kMost));
    if (text.size() > kMost) out += "...";
    return nlohmann::json(out).dump();
}

Failure mismatch(const std::string& header, const std::string& should) {
    return permanent_failure("Header mismatch: " + header + " " + should);
}

}  // namespace

HttpEra http_era(std::optional<std::string_view> protocol_version) {
    if (!protocol_version || speaks_legacy_version(*protocol_version)) return HttpEra::session;
    if (*protocol_version == kModernProtocolVersion) return HttpEra::stateless;
    return HttpEra::unsupported;
}

std::optional<std::string> decode_header_value(std::string_view value) {
    if (!value.starts_with(kSentinelStart) || !value.ends_with(kSentinelEnd) ||
        value.size() < kSentinelStart.size() + kSentinelEnd.size())
        return std::string(value);
    std::string_view encoded =
        value.substr(kSentinelStart.size(), value.size() - kSentinelStart.size() - kSentinelEnd.size());
    // Standard Base64 with padding, read through the URL-safe reader.
    while (!encoded.empty() && encoded.back() == '=') encoded.remove_suffix(1);
    std::string url(encoded);
    for (char& c : url) {
        if (c == '+') {
            c = '-';
        } else if (c == '/') {
            c = '_';
        } else if (c == '-' || c == '_') {
            return std::nullopt;  // not of the standard alphabet
        }
    }
    return base64url_decode(url);
}

Result<Done> check_modern_headers(const HttpRequestHead& head, const nlohmann::json& message) {
    const nlohmann::json* params = message.contains("params") && message["params"].is_object()
                                       ? &message["params"]
                                       : nullptr;
    const auto version_header = head.header("mcp-protocol-version");
    if (!version_header) return mismatch("MCP-Protocol-Version", "is missing");
    const nlohmann::json* meta = params != nullptr && params->contains("_meta") &&
                                         (*params)["_meta"].is_object()
                                     ? &(*params)["_meta"]
                                     : nullptr;
    const nlohmann::json* version =
        meta != nullptr && meta->contains(kMetaProtocolVersion) ? &(*meta)[std::string(kMetaProtocolVersion)] : nullptr;
    if (version == nullptr || !version->is_string() || version->get<std::string>() != *version_header)
        return mismatch("MCP-Protocol-Version",
                        "must be the body's _meta \"" + std::string(kMetaProtocolVersion) + "\"");
    if (!message.contains("method") || !message["method"].is_string())
        return permanent_failure("the message has no method");
    const std::string method = message["method"].get<std::string>();
    const auto method_header = head.header("mcp-method");
    if (!method_header) return mismatch("Mcp-Method", "is missing");
    if (*method_header != method)
        return mismatch("Mcp-Method", "value does not match the body's method " + header_shown(method));
    const char* field = method == "tools/call" || method == "prompts/get" ? "name"
                        : method == "resources/read"                     ? "uri"
                                                                         : nullptr;
    if (field == nullptr) return Done{};
    const auto name_header = head.header("mcp-name");
    if (!name_header) return mismatch("Mcp-Name", "is missing");
    const std::optional<std::string> name = decode_header_value(*name_header);
    if (!name) return mismatch("Mcp-Name", "holds Base64 that does not decode");
    const nlohmann::json* body_name = params != nullptr && params->contains(field) ? &(*params)[field] : nullptr;
    if (body_name == nullptr || !body_name->is_string() || body_name->get<std::string>() != *name)
        return mismatch("Mcp-Name", std::string("value does not match the body's params.") + field +
                                        (body_name != nullptr && body_name->is_string()
                                             ? " " + header_shown(body_name->get<std::string>())
                                             : std::string()));
    return Done{};
}

}  // namespace mcpd
