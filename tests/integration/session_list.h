// Whether `mcpctl sessions` lists a session: shared by the tests of sessions that end.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace integration {

inline bool lists_session(const TestEnv& env, std::uint64_t id) {
    const nlohmann::json listing = nlohmann::json::parse(env.ctl({"--json", "sessions"}).out);
    for (const nlohmann::json& s : listing.value("sessions", nlohmann::json::array())) {
        if (s["id"] == id) return true;
    }
    return false;
}

}  // namespace integration
