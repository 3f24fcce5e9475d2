// What the tests of an upgrade's state (daemon/upgrade_state) share: the state's own part every
// test state starts from, a body read back, and why a body changed one way is refused.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/upgrade_state.h"

namespace mcpd::testing {

// A state's own part, before servers and sessions.
inline UpgradeState base_state() {
    UpgradeState state;
    state.mcpd_version = "0.1.0";
    state.pid = 4242;
    state.config_path = "/etc/mcpd/mcpd.toml";
    state.socket_path = "/run/mcpd/mcpd.sock";
    state.listening_path = state.socket_path;
    state.control_fd = 5;
    return state;
}

// `body` read back: taken, and written again to the same text.
inline Result<UpgradeState> read_back(const nlohmann::json& body) {
    Result<UpgradeState> parsed = parse_upgrade_state(body);
    REQUIRE(parsed.ok());
    CHECK(to_json(parsed.value()).dump() == body.dump());
    return parsed;
}

// Why parse_upgrade_state refuses `body` once `change` made it bad; "(taken)" when it does not
// refuse it, which no CHECK_THAT of a reason matches.
inline std::string refusal_of(const nlohmann::json& body, const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json bad = body;
    change(bad);
    const Result<UpgradeState> read = parse_upgrade_state(bad);
    return read.ok() ? std::string("(taken)") : read.error();
}

}  // namespace mcpd::testing
