// What the tests of an upgrade's state (daemon/upgrade_state) share: why a body changed one way
// is refused.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/upgrade_state.h"

namespace mcpd::testing {

// Why parse_upgrade_state refuses `body` once `change` made it bad; "(taken)" when it does not
// refuse it, which no CHECK_THAT of a reason matches.
inline std::string refusal_of(const nlohmann::json& body, const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json bad = body;
    change(bad);
    const Result<UpgradeState> read = parse_upgrade_state(bad);
    return read.ok() ? std::string("(taken)") : read.error();
}

}  // namespace mcpd::testing
