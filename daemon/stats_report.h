// The result of the stats request (docs/STATS.md): each server's counts, merged over its
// instances (a shared process, private ones, project children, a legacy process, and those
// already freed), with its sessions, restarts and what its processes cost now.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "common/clock.h"
#include "common/duration.h"
#include "daemon/control/peer_auth.h"
#include "daemon/mux/traffic_stats.h"
#include "daemon/server/process_usage.h"

namespace mcpd {

class ManagedServer;
class ServerPool;
class SessionTable;

// One CallCounters as JSON: the COUNTERS object of docs/STATS.md.
nlohmann::json counters_json(const CallCounters& counters);

class StatsReport {
public:
    struct Want {
        bool tools = false;
        bool sessions = false;
        bool children = false;
    };

    // The result for `servers` (registry entries: the pool's shared instances, in order).
    // `asking`: who asked; its sessions_detail holds only the sessions it may see and its
    // per_child no private or project child without one (SessionTable::visible_to). Null:
    // everything (root, mcpd's user, the metrics endpoint).
    nlohmann::json build(const std::vector<const ManagedServer*>& servers, const ServerPool& pool,
                         const SessionTable& sessions, Want want, Duration uptime,
                         const PeerCredentials* asking = nullptr);

private:
    nlohmann::json server_json(const ManagedServer& entry, const ServerPool& pool,
                               const SessionTable& sessions, const ProcessTable& processes,
                               Want want, TimePoint now, const PeerCredentials* asking);

    UsageSampler sampler_;  // remembers the previous CPU sample of each server process
};

}  // namespace mcpd
