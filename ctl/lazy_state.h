// How a lazy server with no process reads in mcpctl's text: "sleeping (cached 2026-11-29
// 10:14)" once its lists are cached, "cold (no cache)" before. status and the server actions
// (warm above all: a quick server may be asleep again by the time the slowest one runs) say
// it the same way.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace mcpctl {

// The text for a server's status entry; empty when it is not a lazy server without a process.
std::string lazy_state_text(const nlohmann::json& server);

}  // namespace mcpctl
