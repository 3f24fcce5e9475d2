// Router tests about requests the child sends to sessions: two sessions that declared every
// client capability, and the requests a child sends.
#pragma once

#include <string>

#include "fake_router_environment.h"

namespace mcpd::testing {

// Every client capability mcpd routes, with 2025-11-25's sub-capabilities.
inline const json kAllClientCapabilities = {
    {"sampling", json::object()},
    {"elicitation", {{"form", json::object()}, {"url", json::object()}}},
    {"roots", {{"listChanged", true}}}};

// Two sessions (1 and 2) with `caps`; child ids from 100.
struct ClientPair : RouterHarness {
    explicit ClientPair(const json& caps = kAllClientCapabilities,
                        const config::ServerConfig& config = router_config())
        : RouterHarness(config) {
        child_ready();
        connect(1, "2025-11-25", caps);
        connect(2, "2025-11-25", caps);
        env.next_child_id = 100;
    }
    // Give session `id` a request in flight at the child; returns what the child got.
    std::string busy(SessionId id) {
        return forward(
            id, R"({"jsonrpc":"2.0","id":"busy","method":"tools/call","params":{"name":"slow"}})");
    }
    // The child asks something; returns the session-side id of what session `to` received.
    std::string ask(SessionId to, const std::string& request) {
        from_child(request);
        return raw_id_of(only_line_to(to));
    }
};

inline std::string child_request(const std::string& raw_id, const std::string& method,
                                 const std::string& params = "{}") {
    return R"({"jsonrpc":"2.0","id":)" + raw_id + R"(,"method":")" + method + R"(","params":)" +
           params + "}";
}

inline const std::string kSamplingParams =
    R"({"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":10})";

// sampling/createMessage params offering the model a tool (2025-11-25's sampling.tools).
inline const std::string kSamplingToolsParams =
    R"({"messages":[],"maxTokens":5,"tools":[{"name":"t","inputSchema":{"type":"object"}}]})";

}  // namespace mcpd::testing
