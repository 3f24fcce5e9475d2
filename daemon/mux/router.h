// The session router: many MCP client sessions on one server's single stdin/stdout channel.
//
// Pure logic, like the Supervisor: it sees lines and envelopes and answers through a
// RouterEnvironment, so unit tests drive it with in-memory sessions and child. Every request
// id a session sends is replaced by one mcpd allocates for the child and restored byte for
// byte on the reply; progress tokens, cancellation targets and child→session request ids are
// mapped the same way, so every session sees exactly its own traffic (docs/MULTIPLEXING.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/indexed_map.h"
#include "common/json_arrays.h"
#include "common/json_envelope.h"
#include "config/registry.h"
#include "daemon/mux/catalog.h"
#include "daemon/mux/in_flight.h"
#include "daemon/mux/project.h"
#include "daemon/mux/replay_state.h"
#include "daemon/mux/router_carry.h"
#include "daemon/mux/router_records.h"
#include "daemon/mux/request_ids.h"
#include "daemon/mux/router_environment.h"
#include "daemon/mux/session_sink.h"
#include "daemon/mux/traffic_stats.h"

namespace mcpd {

class Router {
public:
    // Ended tasks a session may still fetch (tasks/get, tasks/result); older ones are forgotten.
    static constexpr std::size_t kMaxEndedTasks = 1000;
    // What one session's lines may hold while they wait for a child to be ready or for the
    // session's project to be settled: past it, a request is answered with an error at once.
    static constexpr std::size_t kMaxWaitingBytes = 64 * 1024 * 1024;
    // What one session's requests in flight may keep (RequestIds: a fixed cost per request
    // plus its id, progress token and URI), at most about 32,000 requests; past it a request
    // is answered with an error at once.
    static constexpr std::size_t kMaxInFlightBytes = 16 * 1024 * 1024;
    // sharing = "project": how long a client has to answer mcpd's roots/list.
    static constexpr Duration kProjectWait = std::chrono::seconds(3);
    // How long the child's request to a session (sampling, elicitation, roots) may wait for
    // the session's answer: long enough for a person to fill in a form, and bounded, so
    // that an answer mcpd could not match to it does not leave the child waiting forever.
    static constexpr Duration kClientAnswerTimeout = std::chrono::minutes(10);

    // sharing = "project": what a session brings along when it moves to the child of its
    // project (router_project.cpp).
    struct MovedSession {
        SessionId id = 0;
        TimePoint attached_at{};
        std::string protocol;
        std::string served_version;  // the version of the child that answered its initialize
        nlohmann::json capabilities = nlohmann::json::object();
        std::string client_name, client_version;
        bool initialized = false;
        bool ready = false;
        std::optional<int> log_level;
        std::set<std::string> subscriptions;
        routing::TextList held;  // its lines not handled yet, in arrival order
        bool settled_before = false;   // it had a project already: its roots changed
    };

    // `sessions`: where lines for sessions go. `max_message_bytes`: the longest line a
    // session may send (the [daemon] setting).
    Router(const config::ServerConfig& config, RouterEnvironment& env, SessionSink& sessions,
           std::size_t max_message_bytes = config::DaemonConfig{}.max_message_bytes);

    void set_config(const config::ServerConfig& config) { config_ = config; }
    // Whether each settled request is told to the environment (request_settled).
    void set_request_log(bool on) { log_requests_ = on; }
    // What its sessions asked of this child, counted (daemon/mux/traffic_stats.h).
    const TrafficStats& stats() const { return stats_; }

    void attach(SessionId session);
    // The session has gone: cancel its requests at the child, release what it held.
    void detach(SessionId session);
    bool has_session(SessionId session) const { return sessions_.contains(session); }
    std::size_t session_count() const { return sessions_.size(); }
    std::vector<SessionSummary> summaries() const;
    // Each session's counters at this child, departed ones included.
    void for_each_session_counters(
        const std::function<void(SessionId, const CallCounters&)>& visit) const;
    // The protocol version `session` negotiated; empty before its initialize (and on a
    // modern child, which has no handshake).
    std::string_view protocol_of(SessionId session) const;

    // A line from a session, scanned where it lies (`known`: its envelope, read by the caller).
    void on_session_line(SessionId session, wire::PaddedText line, const wire::Envelope* known = nullptr);
    // The same for a line in a string, which may gain capacity (padding for the scanner).
    void on_session_line(SessionId session, std::string& line);
    // A line whose envelope the caller has read already (a group session's spliced call, its
    // envelope moved with Envelope::after_splice): routed the same way, not read again. The
    // envelope is read where it lies: it must not change until the call returns.
    void on_session_line(SessionId session, std::string_view line, const wire::Envelope& envelope);

    // The child completed the handshake; `initialize_result` is what sessions will be served.
    // `modern`: a stateless 2026-07-28 child, reached with server/discover instead of
    // initialize; every request then carries the session's own _meta.
    void on_child_ready(const nlohmann::json& initialize_result, const std::string& version,
                        bool modern = false);
    // A message from the child that is not an answer to mcpd's own requests.
    void on_child_message(std::string_view line, const wire::Envelope& envelope);
    // The child answered `raw_id` with a line mcpd could not use (over max_message_bytes, or
    // not JSON): the request it was for gets an error carrying `message` instead. False when
    // no request at the child has that id.
    bool on_child_reply_lost(std::string_view raw_id, std::string_view message,
                             std::string_view reason);
    // Session `session` answered `raw_id` (a request of the child's it was sent) with a line mcpd
    // could not use (over max_message_bytes): the child gets an error for its request instead
    // of waiting. False when that session has no such request.
    bool on_session_reply_lost(SessionId session, std::string_view raw_id, std::string_view why);
    // The child is being stopped (a restart, a reload, a stop, a fault): what it has may still
    // be answered, but it takes nothing new. Later lines wait for the next child, up to
    // start_timeout, and fail with fail_waiting when none is coming.
    void on_child_stopping();
    // The child is gone (crash, restart, stop): what was in flight is sent to the next child
    // or failed, as replay_policy.h decides (router_replay.cpp). `unwritten`: the bytes that
    // were queued for its stdin and never reached the pipe.
    void on_child_gone(const std::string& reason, std::string_view unwritten = {});
    bool child_ready() const { return child_ready_; }
    // The child speaks the stateless era (2026-07-28): sessions have no handshake.
    bool modern_child() const { return modern_; }
    // The server will not come up by itself (failed, or stopped): answer what is waiting now.
    void fail_waiting(const std::string& reason);

    // Lazy servers (router_lazy.cpp). `lazy`: while no process runs, sessions are answered
    // from the catalog; the child's lists are read again each time it starts; the child is
    // idle after `idle` with nothing open.
    void set_lazy(bool lazy, Duration idle);
    bool lazy() const { return lazy_; }
    // What sessions are answered from while no process runs (the persisted cache);
    // `serve_private`: lists marked private may be served (every session is one user's).
    void set_catalog(Catalog catalog, bool serve_private);
    const std::optional<Catalog>& catalog() const { return catalog_; }
    // No catalog any more (the entry changed, or is not lazy now): cold until the child runs.
    void drop_catalog() {
        catalog_.reset();
        catalog_current_ = false;
    }
    // Lazy, no process, and a catalog to answer from.
    bool sleeping() const { return lazy_ && !child_ready_ && catalog_.has_value(); }
    // Requests answered from the catalog.
    std::uint64_t answered_from_cache() const { return answered_from_cache_; }
    // What was replayed after a child died, and the tool hints that decide it.
    const ReplayState& replay() const { return replay_; }

    // sharing = "project" (router_project.cpp). A session's project is settled on this
    // child: the lines it held meanwhile are handled now.
    void release_held(SessionId session);
    // It cannot be served: each request it held is answered with `message`.
    void fail_held(SessionId session, std::string_view message);
    // Take out a session whose project's child is another: what it brings, and it is gone
    // from here (as detach). Nothing when it is not here.
    std::optional<MovedSession> release_session(SessionId session);
    // Take over a session another child's router released, and handle what it held.
    void adopt_session(MovedSession moved);
    // Whether `session` is waiting for its project to be settled.
    bool awaiting_project(SessionId session) const;
    // The project's roots changed (they are in the configuration): tell the child.
    void roots_changed();
    // Whether `session` left for another child and only waits here for answers.
    bool departed(SessionId session) const;
    // A departed session cancels a request of its still here (notifications/cancelled `line`).
    void cancel_for_departed(SessionId session, std::string_view line);

    std::optional<TimePoint> next_deadline() const;
    void on_timer();

    // An upgrade in place (router_carry.cpp). Why its sessions cannot be carried this moment
    // (something under way between them and the child, which the upgrade waits out); empty
    // when they can.
    std::string why_not_carried() const;
    // What it keeps besides its sessions, and one session's state (none when not attached).
    CarriedRouter carried() const;
    std::optional<routing::SessionState> carried_session(SessionId session) const;
    // In the new process, once its child was taken over: the router's state, then each of its
    // sessions, as they were; nothing is said to the child or to the sessions.
    void restore_carried(const CarriedRouter& state);
    void adopt_carried(routing::SessionState session);
    // Every session carried has been adopted: what waited for a ready child goes to it.
    void carried_in();

    // Requests at the child on behalf of sessions (for tests and status).
    std::size_t in_flight() const { return requests_.size(); }
    // Messages of `session` not yet settled: requests at the child, and lines (requests or
    // notifications) queued until it is ready or waiting their turn.
    // A session whose client closed its input stays open until this is 0.
    std::size_t unanswered(SessionId session) const;

private:
    using SessionState = routing::SessionState;
    using PendingKind = routing::PendingKind;
    using Waiter = routing::Waiter;
    using Pending = routing::Pending;
    using ProgressRoute = routing::ProgressRoute;
    using ChildRequest = routing::ChildRequest;
    using ChildRequestMap = routing::ChildRequestMap;
    using Queued = routing::Queued;
    using Replay = routing::Replay;
    using Waiting = routing::Waiting;

    // Whether one more line of `s` may wait (counted when it may).
    static bool admit_waiting(SessionState& s, std::string_view line);
    // The work behind on_session_line / on_child_message; the public entry points wrap them
    // so that a bug in handling one message answers that message and nothing else breaks.
    // `known`: the line's envelope, read by the caller; null to read it here.
    void route_session_line(SessionId id, wire::PaddedText padded, const wire::Envelope* known = nullptr);
    void route_child_message(std::string_view line, const wire::Envelope& e);
    // Log a contained exception: the first, then every 100th, with the count.
    void contained(const std::exception& error, std::string_view what);

    // sharing = "project" (router_project.cpp): after its initialized, ask the session for
    // its roots (or report it has none); its answer; a line held meanwhile. True when
    // `line` was taken (held, or the answer).
    void settle_project(SessionState& s);
    bool hold_for_project(SessionState& s, std::string_view line, const wire::Envelope& e);
    void project_deadlines(TimePoint now);
    // Another sharing mode: a session answered the child's roots/list; the first time two
    // sessions' roots differ, say once that this server wants sharing = "project".
    void compare_roots(const SessionState& s, std::string_view line);
    // Departed sessions whose requests have all been answered leave (callers check departed_
    // first: this runs after child answers).
    void sweep_departed();
    // The lists (tools, prompts, resources) the child declares listChanged for.
    std::vector<std::string_view> announced_lists() const;
    // The child's requests waiting on `session` get an error saying `why`.
    void fail_child_requests_of(SessionId session, std::string_view why);
    // `session` no longer holds `uris`; those nobody holds any more are unsubscribed.
    void drop_subscriptions(SessionId session, const std::set<std::string>& uris);

    // Session side (router_session.cpp).
    void handle_session_message(SessionState& s, std::string_view line, const wire::Envelope& e);
    void handle_session_request(SessionState& s, std::string_view line, const wire::Envelope& e);
    void handle_session_notification(SessionState& s, std::string_view line,
                                     const wire::Envelope& e);
    // notifications/cancelled from session `s`.
    void cancel_request(SessionState& s, std::string_view line, const wire::Envelope& e);
    void answer_initialize(SessionState& s, std::string_view line, const wire::Envelope& e);
    void set_level(SessionState& s, std::string_view line, const wire::Envelope& e);
    void subscribe(SessionState& s, std::string_view line, const wire::Envelope& e, bool on);
    // The subscribe of `uri`, or the last setLevel, sent to the child and not yet answered.
    std::optional<std::uint64_t> unanswered_subscribe(const std::string& uri) const;
    std::optional<std::uint64_t> unanswered_level() const;
    // Session `s`'s request `raw_id` is answered when the child answers `child_id`.
    void wait_on(SessionState& s, std::uint64_t child_id, std::string_view raw_id);
    // Forget a waiting request (its session cancelled it or left); no answer is sent.
    void drop_waiter(SessionState& s, std::string_view raw_id);
    // The child answered a request others wait on: {} to each, or its error (and the hold undone).
    void answer_waiters(const Pending& p, std::string_view line, const wire::Envelope& e);
    // The request others wait on failed without the child's answer: -32603 to each.
    void fail_waiters(const Pending& p, std::string_view message, std::string_view reason);
    // The sender of `child_id` no longer wants its answer: the first waiter takes the request
    // over. False when nobody waits on it.
    bool hand_over(std::uint64_t child_id);
    // A subscription the child did not take is not held by `session`.
    void release_hold(SessionId session, const std::string& uri);
    void forward_request(SessionState& s, std::string_view line, const wire::Envelope& e,
                         PendingKind kind = PendingKind::forward, std::string uri = {});
    // What a request other than tools/call needs noted in its record (tasks, lists, levels).
    void note_method_specifics(Pending& p, std::string_view line, const wire::Envelope& e);
    void reply(SessionState& s, std::string_view raw_id, std::string_view result_json);
    // Modern child: requests mcpd answers, trims or filters (router_session.cpp).
    void handle_modern_request(SessionState& s, std::string_view line, const wire::Envelope& e);
    void forward_listen(SessionState& s, std::string_view line, const wire::Envelope& e);
    // The cached DiscoverResult when its cacheScope and ttlMs let it be served now.
    const nlohmann::json* fresh_discover() const;
    // Whether the child's DiscoverResult advertises tasks.
    bool child_has_tasks() const;
    // A tasks/list result with only `session`'s tasks in it.
    void send_own_tasks(SessionId session, std::string_view line, const wire::Envelope& e,
                        const std::string& original_id);
    // Whether the session already has a request with this id at the child or waiting.
    bool outstanding(const SessionState& s, std::string_view raw_id) const;
    void reply_error(SessionId s, std::string_view raw_id, int code, std::string_view message,
                     std::string_view reason = {});

    // The tools the child lists (router_listed.cpp): whether a tools/list asks for a later
    // page (it has a cursor), and the names in the child's answer, kept for the stats.
    static bool asks_later_page(std::string_view line);
    void note_listed_tools(std::string_view line, bool first_page);
    // The names of a tools array (a tools/list answer's, or the catalog's), as many as the stats
    // keep of a child's list.
    static std::vector<std::string> listed_tool_names(const nlohmann::json& tools);

    // Child side (router_child.cpp).
    void handle_child_response(std::string_view line, const wire::Envelope& e);
    // A response with id null (the child's parse error): the answer to the one request at the
    // child when there is exactly one, else dropped; noted either way with the line's start.
    void answer_null_id(std::string_view line, const wire::Envelope& e);
    void handle_child_notification(std::string_view line, const wire::Envelope& e);
    void handle_modern_notification(std::string_view line, const wire::Envelope& e);
    Pending* listen_stream(std::string_view raw_own_id, std::uint64_t& child_id);
    // A modern child ends a listen stream (notifications/cancelled): its owner alone hears it.
    void end_listen_stream(std::string_view line, const wire::Envelope& e);
    std::optional<SessionId> only_busy_session() const;
    static std::string task_id_of(const wire::Envelope& e, std::string_view line);
    // The revision a message needs when `s` negotiated an older one; empty when it may have it.
    std::string_view newer_revision_needed(const SessionState& s, const wire::Envelope& e,
                                           std::string_view line) const;
    // Whether `s`'s revision has this notification; dropped and noted when it does not.
    bool revision_has(const SessionState& s, const wire::Envelope& e, std::string_view line);
    // A task seen at a terminal status: its progress ends, its owner keeps the right to
    // fetch it until kMaxEndedTasks later tasks of its own have ended.
    void mark_task_ended(const std::string& task_id);
    // -32042: the URL elicitations a session must complete first; their completions go to it.
    void remember_required_elicitations(SessionState& s, std::string_view line);
    // A forwarded message read with nlohmann (cold paths), lone surrogates read as U+FFFD
    // instead of failing the parse; discarded when it is not JSON.
    static nlohmann::json parse_forwarded(std::string_view line);
    void broadcast(std::string_view line);

    // The child's requests to sessions (router_child_requests.cpp).
    void handle_child_request(std::string_view line, const wire::Envelope& e);
    std::optional<SessionId> route_child_request(const wire::Envelope& e, std::string_view line);
    // Why the task a child request is tied to (related-task) cannot take it: unknown, its
    // session gone, or already ended. Empty when it can, or when the request names no task.
    std::string unusable_task_link(const wire::Envelope& e, std::string_view line) const;
    std::string missing_capability(const SessionState& s, const wire::Envelope& e,
                                   std::string_view line) const;
    void decline_child_request(std::string_view line, const wire::Envelope& e,
                               const std::string& why);
    // A session's answer to a child request: relayed with the child's id.
    void handle_session_response(SessionState& s, std::string_view line, const wire::Envelope& e);
    // A session's answer to a child request that cannot be relayed: the child gets -32603 for
    // it. False when `raw_id` is no request of the child's waiting on that session.
    bool fail_child_request(SessionId session, std::string_view raw_id, std::string_view why);
    // A session line meant as the answer to a child request that cannot be relayed (not JSON,
    // not JSON-RPC, a result that is not an object, a malformed error): fail_child_request.
    void check_session_answer(SessionId session, std::string_view line, wire::ScanStatus status,
                              const wire::Envelope& e);
    // A session's unusable answer that names no request: when exactly one request of the
    // child waits on that session it is the one, and fails; otherwise they wait out their
    // deadlines (noted).
    void fail_only_child_request(SessionId session, std::string_view why);
    // The earliest deadline of the child's requests to sessions; those past it fail.
    std::optional<TimePoint> next_client_answer_deadline() const;
    void expire_child_requests(TimePoint now);

    // Shared state changes (router.cpp).
    // Returns the child id it was sent with.
    std::uint64_t send_internal(std::string_view method, const nlohmann::json& params,
                                PendingKind kind, std::string uri = {});
    void update_child_level();
    // Whether a ready session that never set a level is attached; if so, remember the most
    // verbose level the child has had for it (unset_view_), else forget it.
    bool note_unset_view();
    void restore_child_state();

    // Lazy servers (router_lazy.cpp).
    // A line of a sleeping server's session answered from the catalog; false when it needs
    // the child (it then waits for it, as on any server that is starting).
    bool answer_from_catalog(SessionState& s, std::string_view line, const wire::Envelope& e);
    bool answer_list_from_catalog(SessionState& s, std::string_view line, const wire::Envelope& e);
    // A running lazy child's list from its current catalog, for a list whose changes the child
    // announces (listChanged); false when it is the child's to answer.
    bool answer_current_list(SessionState& s, std::string_view line, const wire::Envelope& e);
    // A modern-era session's server/discover and lists, for a revision the server supports.
    bool answer_modern_from_catalog(SessionState& s, std::string_view line,
                                    const wire::Envelope& e);
    // The catalog's handshake becomes what sessions are initialized with.
    void take_handshake_from_catalog();
    // Read every list the child offers again (all pages), into refreshing_.
    void refresh_catalog();
    void ask_catalog_page(ListKind kind, const std::string& cursor);
    void on_catalog_page(const Pending& page, std::string_view line, const wire::Envelope& e);
    void finish_catalog_refresh();
    // A request, a subscription, a listen stream, a task or a request of the child's is open:
    // the child is not idle.
    bool open_work() const;
    std::optional<TimePoint> idle_deadline() const;
    // A request leaves requests_ unanswered; it counts as `outcome`.
    void release(std::uint64_t child_id, bool tombstone, Outcome outcome = Outcome::cancelled);
    // Count request `p` (child id `child_id`) as settled (no-op for one not counted), and log
    // it when asked to. `s`: its session, which the caller has looked up; null when gone.
    void settle(std::uint64_t child_id, const Pending& p, SessionState* s, Outcome outcome,
                std::size_t bytes_out);
    void flush_queue();
    // sharing = "serialized": one session request at the child at a time.
    bool serialized_busy() const;
    void pump_serialized();
    SessionState* find(SessionId id);
    // `line` with `changes` applied, to a session or to the child.
    void send_spliced(SessionId session, std::string_view line,
                      const wire::Replacements& changes);
    bool send_spliced_to_child(std::string_view line, const wire::Replacements& changes);
    // Replay after a crash (router_replay.cpp). Keep the line of request `child_id` when it
    // could be replayed, or when it was not `sent` (the child's stdin was closed already).
    void keep_for_replay(std::uint64_t child_id, std::string_view line, const wire::Envelope& e,
                         std::string_view tool, bool sent);
    // The requests among the child's `unwritten` stdin, as their sessions sent them: child
    // id → line.
    std::unordered_map<std::uint64_t, std::string> unwritten_requests(std::string_view unwritten);
    // What happens to request `p` of a child that died: its line and crashes in `replay` when
    // it is sent again. Only for a session's forwarded request.
    ReplayVerdict decide_replay(std::uint64_t child_id, const Pending& p,
                                const std::unordered_map<std::uint64_t, std::string>& unwritten,
                                Replay& replay);
    // A line that waited for a child that is not coming: a request gets an error saying
    // `message`, with outcome "unknown" when it is a replayed one that reached a child.
    void fail_queued(Queued& q, std::string_view message, std::string_view reason);
    // Put replayed requests, then `turns` (sharing = "serialized": requests that waited their
    // turn), ahead of every line that waits for the next child.
    void requeue(std::vector<Replay> replays, std::deque<Waiting> turns, const std::string& reason);

    config::ServerConfig config_;
    RouterEnvironment& env_;
    SessionSink& sessions_out_;
    wire::EnvelopeScanner scanner_;
    wire::Envelope envelope_;               // reused for every session line
    std::vector<std::string_view> pieces_;  // reused splice output

    IndexedMap<SessionId, SessionState> sessions_;  // found by hash per message
    bool child_ready_ = false;
    bool modern_ = false;
    nlohmann::json initialize_result_;
    std::string child_version_;
    std::string served_version_;  // what sessions were told; a restart must keep it
    // Modern child: its latest DiscoverResult (the probe's, then forwarded discovers'), and when.
    std::optional<nlohmann::json> discover_cache_;
    // Lazy servers (router_lazy.cpp).
    bool lazy_ = false;
    Duration lazy_idle_{};
    std::optional<Catalog> catalog_;
    bool serve_private_ = false;
    Catalog refreshing_;              // the lists being read again from the child
    std::size_t refresh_pending_ = 0;  // lists of refreshing_ not read to their end yet
    bool refresh_failed_ = false;      // one of them could not be read: nothing is saved
    bool refresh_quiet_ = false;       // the child announced the change itself
    // The running child's lists as read since it started, and none changed since (a
    // list_changed starts another reading): its sessions' lists need no round trip.
    bool catalog_current_ = false;
    std::uint64_t refresh_generation_ = 0;  // pages of an earlier refresh are ignored
    TimePoint last_answer_{};          // when the child last answered (its idle time's start)
    std::uint64_t answered_from_cache_ = 0;
    TimePoint discover_received_{};

    InFlight requests_;  // the requests at the child, their progress tokens, tombstones
    ChildRequestMap child_requests_;
    std::map<std::string, std::set<SessionId>> subscribers_;  // uri → sessions
    std::optional<int> child_level_;
    // The most verbose level the child has had while sessions that never set one were
    // attached: what they have been getting, kept for them (across restarts too).
    std::optional<int> unset_view_;
    std::uint64_t level_request_ = 0;  // child id of the last logging/setLevel sent
    std::unordered_map<std::string, SessionId> task_owners_;
    // 2025-11-25: a task-augmented request's progress token lives as long as the task.
    std::unordered_map<std::string, std::string> task_tokens_;  // task id → own raw token
    std::deque<Queued> queue_;
    std::deque<Waiting> serial_queue_;
    std::uint64_t contained_failures_ = 0;
    std::uint64_t next_child_request_ = 1;
    std::optional<Project> first_roots_;  // the first roots a session answered the child with
    bool roots_differ_noted_ = false;
    std::size_t departed_ = 0;  // sessions with `departed` set
    // Sessions asked their roots and not answered yet: when they stop waiting. Kept apart from
    // SessionState so that next_deadline does not visit every session.
    std::map<SessionId, TimePoint> roots_deadlines_;
    TrafficStats stats_;
    ReplayState replay_;
    bool log_requests_ = false;
};

// RFC 5424 severities as MCP names them, most verbose first; -1 when unknown.
int log_severity(std::string_view level);
std::string_view log_level_name(int severity);

}  // namespace mcpd
