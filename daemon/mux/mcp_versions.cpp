#include "daemon/mux/mcp_versions.h"

#include <algorithm>
#include <array>

namespace mcpd {

using nlohmann::json;

namespace {

// Newest first. Asked of every HTTP request's MCP-Protocol-Version: views compared by length
// first, without the guard of a function's static or a string per revision.
constexpr std::array<std::string_view, 4> kLegacyVersions = {"2025-11-25", "2025-06-18",
                                                            "2025-03-26", "2024-11-05"};

}  // namespace

const std::vector<std::string>& legacy_protocol_versions() {
    static const std::vector<std::string> versions(kLegacyVersions.begin(), kLegacyVersions.end());
    return versions;
}

bool speaks_legacy_version(std::string_view version) {
    return std::find(kLegacyVersions.begin(), kLegacyVersions.end(), version) !=
           kLegacyVersions.end();
}

// Legacy revisions: mcpd routes roots, sampling and elicitation requests to the session they
// belong to (the router declines what that session did not declare), so it declares every
// sub-capability the revision defines for them. Revisions are dates, so they compare as text.
// - roots.listChanged is false: the router does not pass a session's roots/list_changed on
//   (one session's roots are not every session's), so the child must not wait for it.
// - never `tasks` (2025-11-25): the router does not relay task-augmented answers to the child.
// - `extensions` exists only from 2026-07-28.
// The modern revision has no server→client requests, and mcpd's own server/discover (probe and
// health check) takes no input: it declares nothing. Each session's requests carry its own
// capabilities in their _meta, untouched.
json client_capabilities(std::string_view version) {
    if (version >= kModernProtocolVersion) return json::object();
    json capabilities = {{"roots", {{"listChanged", false}}}, {"sampling", json::object()}};
    if (version >= "2025-06-18") capabilities["elicitation"] = json::object();
    if (version >= "2025-11-25") {
        capabilities["sampling"] = {{"context", json::object()}, {"tools", json::object()}};
        capabilities["elicitation"] = {{"form", json::object()}, {"url", json::object()}};
    }
    return capabilities;
}

json project_client_capabilities(std::string_view version) {
    json capabilities = client_capabilities(version);
    if (capabilities.contains("roots")) capabilities["roots"]["listChanged"] = true;
    return capabilities;
}

}  // namespace mcpd
