// What a reload does, decided from the old and the new registry alone (pure: no servers, no
// processes), so unit tests can drive it. Daemon::reload applies the plan.
#pragma once

#include <string>
#include <vector>

#include "config/registry.h"

namespace mcpd {

struct ReloadPlan {
    // Non-empty: the reload is refused and nothing changes. The sentence follows "<path>: ".
    std::string refusal;
    // added, changed and unchanged in the new registry's order; removed in the old one's.
    std::vector<std::string> added, removed, changed, unchanged;
    // Those of `changed` whose allow_users/allow_groups alone changed: kept running.
    std::vector<std::string> access_only;
    // Every server of the new registry, in its order.
    std::vector<std::string> order;
};

// Refused when `next` would remove every server of a non-empty `current`, unless
// `allow_remove_all`: an empty or half-written registry must not stop everything.
ReloadPlan plan_reload(const config::Registry& current, const config::Registry& next,
                       bool allow_remove_all);

}  // namespace mcpd
