// The records a Router keeps: one per attached session, per request in flight at the child,
// per child request at a session, per line waiting for the child. Plain data; what is done
// with them is the Router's (router.h).
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "daemon/mux/catalog.h"
#include "daemon/mux/replay_state.h"
#include "daemon/mux/request_ids.h"
#include "daemon/mux/session_sink.h"
#include "daemon/mux/traffic_stats.h"

namespace mcpd::routing {

// Texts kept in order for a session: a list, which holds no memory while it is empty (a
// std::deque allocates its map and a first block as it is made, over a KiB per session).
using TextList = std::list<std::string>;

// What the router knows of one attached session: the protocol state (its transport, the
// descriptors and queues, is a ClientTransport, daemon/mux/client_transport.h).
struct SessionState {
    SessionId id = 0;
    TimePoint attached_at{};
    bool initialized = false;  // answered its initialize
    bool ready = false;        // sent notifications/initialized
    std::string protocol;
    nlohmann::json capabilities = nlohmann::json::object();
    std::string client_name, client_version;
    std::optional<int> log_level;  // RFC 5424 severity index; none = unfiltered
    std::set<std::string> subscriptions;
    RequestIds in_flight;  // its requests at the child: raw id → child id
    std::set<std::string> tasks;
    std::set<std::string> ended_tasks;       // of those, the ones seen ended (terminal status)
    TextList ended_order;                    // ended_tasks, oldest first
    std::set<std::string> url_elicitations;  // elicitationIds whose completion it waits for
    // Its subscribes and setLevels waiting for the child's answer to an earlier one they
    // depend on: raw id → that request's child id.
    RequestIds waiting;
    // Bytes of its lines waiting their turn in serial_queue_ (sharing = "serialized"),
    // bounded by kMaxWaitingBytes.
    std::size_t serial_bytes = 0;
    bool legacy_elsewhere =
        false;  // a legacy client passed to a legacy process (pass_to_legacy)
    // sharing = "project": its project is being settled; its lines wait in `held`.
    bool project_asked = false;
    bool awaiting_project = false;
    std::string roots_request;  // raw id of mcpd's roots/list to it, until answered
    TextList held;
    // Bytes of its lines that wait, in `held` or in the router's queue for a child that is
    // not ready (bounded by kMaxWaitingBytes).
    std::size_t waiting_bytes = 0;
    bool project_settled = false;  // served here (or moved here) once its project was known
    // It moved to another child with requests of its still here: it is neither ready nor
    // initialized for this child any more, and goes once they are answered.
    bool departed = false;
    // What it asked of this child, counted (stats_ keeps the names and the totals).
    CallCounters counters;
};
enum class PendingKind { forward, subscribe, unsubscribe, set_level, internal, listen };
struct Waiter {  // a session's request answered with the answer to another's
    SessionId session = 0;
    std::string raw_id;
};
struct Pending {
    SessionId session = 0;  // 0: mcpd's own
    PendingKind kind = PendingKind::forward;
    std::string original_id;    // raw token
    std::string own_token;      // raw token given to the child for progress, or empty
    std::string uri;            // subscribe/unsubscribe
    std::string task_id;        // tasks/result, tasks/cancel: the task it ends
    std::string reported_task;  // tasks/get, tasks/cancel: the task whose status the result is
    bool task_result = false;   // tasks/result: answered once the task has ended
    bool own_tasks_only = false;  // tasks/list: the asking session sees its own tasks only
    bool subscribes = false;      // resources/subscribe of `uri`, a session's or mcpd's own
    std::optional<int> level;     // logging/setLevel: the severity the child was asked for
    std::vector<Waiter> waiters;  // the same subscribe or a setLevel it covers, from others
    std::optional<TimePoint> deadline;
    // Modern child: what the answer needs besides the id.
    bool discover = false;  // server/discover: its result refreshes the cache
    // Its counters in stats_ (null: not counted, mcpd's own or a listen stream), when it
    // was sent and how long the request was.
    CallCounters* counted = nullptr;
    TimePoint sent{};
    std::size_t bytes_in = 0;
    // tools/list: its answer says which tools the child has (router_listed.cpp); a
    // first page (no cursor) replaces what it listed before.
    bool lists_tools = false;
    bool first_page = false;
    // Lazy servers: a page of this list, asked by mcpd to refresh the catalog.
    std::optional<ListKind> catalog_list;
    std::uint64_t catalog_generation = 0;  // of the refresh that asked it
    // Replay after a crash (router_replay.cpp): the session's line when it could be
    // replayed, children that died with it in flight, and whether the child reported
    // progress on it to its session.
    KeptLine kept;
    unsigned crashes = 0;
    bool progressed = false;
    bool unsent = false;  // the child's stdin was closed already: it never got it
};
struct ProgressRoute {
    SessionId session = 0;
    std::string original_token;
    std::uint64_t child_id = 0;  // the request it reports on
};
struct ChildRequest {  // a child→session request in flight
    SessionId session = 0;
    std::string child_id;  // raw token
    std::string method;
    std::string progress_token;  // raw token the child attached, if any
    TimePoint deadline{};        // when the child gets an error instead (kClientAnswerTimeout)
};
using ChildRequestMap = std::unordered_map<std::string, ChildRequest>;  // by session-side id
struct Queued {  // a session line waiting for the child to be ready
    SessionId session = 0;
    std::string line;
    TimePoint deadline;
    unsigned crashes = 0;  // a replayed request: children that died with it in flight
};
struct Replay {  // a request of a child that died, to be sent to the next
    std::uint64_t child_id = 0;
    SessionId session = 0;
    std::string line;
    unsigned crashes = 0;
};

struct Waiting {  // sharing = "serialized": a request waiting its turn
    SessionId session = 0;
    std::string raw_id;
    std::string line;
    unsigned crashes = 0;  // a replayed request: children that died with it in flight
};

}  // namespace mcpd::routing
