#include "daemon/reload_plan.h"

#include <algorithm>

#include "daemon/server/config_change.h"

namespace mcpd {

ReloadPlan plan_reload(const config::Registry& current, const config::Registry& next,
                       bool allow_remove_all) {
    ReloadPlan plan;
    const bool keeps_any = std::any_of(
        current.servers.begin(), current.servers.end(),
        [&next](const config::ServerConfig& s) { return next.find(s.name) != nullptr; });
    if (!current.servers.empty() && !keeps_any && !allow_remove_all) {
        // An empty file, or one an editor or `cp` is still writing, would stop everything.
        plan.refusal =
            next.servers.empty() ? "it lists no servers" : "it lists none of the running servers";
        plan.refusal +=
            ", so reloading it would stop every server and end every session; nothing was "
            "changed. Check the file (an editor or a copy may still be writing it); to remove "
            "every server all the same, run 'mcpctl reload --allow-remove-all'";
        return plan;
    }
    for (const config::ServerConfig& config : next.servers) {
        plan.order.push_back(config.name);
        const config::ServerConfig* existing = current.find(config.name);
        if (existing == nullptr) {
            plan.added.push_back(config.name);
            continue;
        }
        switch (classify_change(*existing, config)) {
            case ConfigChange::none:
                plan.unchanged.push_back(config.name);
                break;
            case ConfigChange::access:
                plan.access_only.push_back(config.name);
                plan.changed.push_back(config.name);
                break;
            case ConfigChange::restart:
                plan.changed.push_back(config.name);
                break;
        }
    }
    for (const config::ServerConfig& config : current.servers) {
        if (next.find(config.name) == nullptr) plan.removed.push_back(config.name);
    }
    return plan;
}

}  // namespace mcpd
