// The text a tool answers one call with: shared by the tests that call tools through a session.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "mcp_session.h"

namespace integration {

inline std::string call_text(McpSession& session, const std::string& tool,
                             const nlohmann::json& arguments = nlohmann::json::object()) {
    return session.wait_response(session.call_tool(tool, arguments)).tool_text();
}

}  // namespace integration
