// What a Router hands across an upgrade in place (docs/UPGRADE.md): the state it keeps besides
// its requests in flight, and each attached session's protocol state, as plain records with
// their JSON form. Read by type before anything of them is used; the Router takes them back in
// router_carry.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "daemon/mux/replay_policy.h"
#include "daemon/mux/router_records.h"
#include "daemon/mux/traffic_stats.h"

namespace mcpd {

// A request at the child, as its record is carried: the record itself, with where its
// counters are in the stats (named by tool or method) and the line kept for replay in place
// of the pointers the router keeps.
struct CarriedRequest {
    std::uint64_t child_id = 0;
    routing::Pending pending;  // its `counted` and `kept` are set again by the router
    std::optional<std::pair<bool, std::string>> counted;  // (a tool?, the name counted)
    std::optional<std::string> kept;
    std::optional<std::pair<std::string, std::string>> log_names;  // for the request log
};

// What a router's sessions asked of the child, counted (TrafficStats), and what replay knows.
struct CarriedStats {
    std::map<std::string, CallCounters> tools, methods;
    std::uint64_t sessions_total = 0;
    std::vector<std::string> listed_tools;
    std::map<std::string, ToolHints> hints;
    std::vector<std::uint64_t> replay_counts;  // per ReplayVerdict, in kReplayVerdicts order
};

struct CarriedRouter {
    // Requests at the child and lines that wait (version 2 with requests; none when absent).
    std::vector<CarriedRequest> requests;
    std::vector<std::pair<std::string, routing::ChildRequest>> child_requests;  // by session-side id
    std::vector<routing::Queued> queue;
    std::vector<routing::Waiting> serial_queue;
    std::uint64_t level_request = 0;
    std::optional<CarriedStats> stats;
    std::uint64_t next_child_request = 1;  // the next id mcpd gives a child's request to a session
    std::optional<int> child_level;        // the logging level the child was last set to
    std::optional<int> unset_view;         // what sessions that set none have been getting
    std::string served_version;            // what sessions were told at their initialize
    std::map<std::string, SessionId> task_owners;         // task id → its session
    std::map<std::string, std::string> task_tokens;       // task id → mcpd's progress token
    std::vector<std::uint64_t> tombstones;                // cancelled child ids, oldest first
    std::uint64_t next_progress_token = 1;
    std::map<std::string, routing::ProgressRoute> progress;  // mcpd's token → its owner
    bool roots_differ_noted = false;
    std::uint64_t answered_from_cache = 0;  // a lazy server's requests its cache answered
};

nlohmann::json to_json(const CarriedRouter& router);
// A router's counts alone (as `stats` in a router's state): for what freed instances counted.
nlohmann::json to_json(const CarriedStats& stats);
Result<CarriedStats> read_carried_stats(const nlohmann::json& stats);
Result<CarriedRouter> read_carried_router(const nlohmann::json& router);

// A session's protocol state: what it negotiated, subscribed, set and counted, and its
// requests at the child or waiting. Lines held for a project being settled are not carried:
// an upgrade waits until there are none (Router::why_not_carried).
nlohmann::json to_json(const routing::SessionState& session);
Result<routing::SessionState> read_carried_session(const nlohmann::json& session);

// The parts of a router's state that are requests and counts (router_carry_requests.cpp):
// written into, and read from, the router's object.
void write_requests(const CarriedRouter& router, nlohmann::json& out);
bool read_requests(const nlohmann::json& body, CarriedRouter& router, std::string& error);
nlohmann::json to_json(const CallCounters& counters);
bool read_counters(const nlohmann::json& body, CallCounters& counters, std::string& error);

}  // namespace mcpd
