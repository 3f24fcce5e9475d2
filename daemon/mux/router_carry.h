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
#include "daemon/mux/router_records.h"

namespace mcpd {

struct CarriedRouter {
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
};

nlohmann::json to_json(const CarriedRouter& router);
Result<CarriedRouter> read_carried_router(const nlohmann::json& router);

// A session's protocol state: what it negotiated, subscribed, set and counted. What it had
// under way (requests, held lines, a project being settled) is not carried: an upgrade waits
// until there is none (Router::why_not_carried).
nlohmann::json to_json(const routing::SessionState& session);
Result<routing::SessionState> read_carried_session(const nlohmann::json& session);

}  // namespace mcpd
