// The MCP protocol revisions mcpd speaks, and what it declares as a client in each: shared by
// mcpd's own handshake with a child and by the router's answers to sessions.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace mcpd {

// The legacy protocol revisions mcpd speaks, newest first.
const std::vector<std::string>& legacy_protocol_versions();
// Whether `version` is one of legacy_protocol_versions().
bool speaks_legacy_version(std::string_view version);
// The modern (stateless) revision mcpd speaks.
inline constexpr std::string_view kModernProtocolVersion = "2026-07-28";
// The _meta members in which a modern request carries what a legacy session negotiated once.
inline constexpr const char* kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kMetaClientInfo = "io.modelcontextprotocol/clientInfo";

// What mcpd declares as its client capabilities to a child speaking `version`: exactly the
// members and sub-capabilities that revision defines for what mcpd routes to sessions.
nlohmann::json client_capabilities(std::string_view version);
// The same for a child of a sharing = "project" server: mcpd answers its roots/list with its
// project's roots and tells it when they change (roots.listChanged is true).
nlohmann::json project_client_capabilities(std::string_view version);

}  // namespace mcpd
