// Router: the child coming and going. When it is ready, the sessions' state is restored on it
// (subscriptions, the log level) and what waited is sent; when it stops or is gone, what it
// held is failed or waits for the next one.
#include <deque>
#include <string>
#include <vector>

#include "common/json_read.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

void Router::on_child_ready(const json& initialize_result, const std::string& version,
                            bool modern) {
    modern_ = modern;
    initialize_result_ = initialize_result;
    discover_cache_.reset();
    if (modern) {
        discover_cache_ = initialize_result;
        discover_received_ = env_.now();
    }
    child_version_ = version;
    if (!served_version_.empty() && version != served_version_) {
        // Sessions negotiated with the old child; they cannot silently switch revisions.
        std::vector<SessionId> initialized;
        for (const auto& [id, s] : sessions_) {
            if (s.initialized) initialized.push_back(id);
        }
        env_.note("the restarted server speaks protocol " + version + " instead of " +
                  served_version_ + "; closing " + std::to_string(initialized.size()) +
                  " sessions so their clients reconnect");
        for (SessionId id : initialized)
            sessions_out_.close(id, "the server changed protocol version");
        served_version_.clear();
    }
    child_ready_ = true;
    restore_child_state();
    flush_queue();
    for (const auto& [id, s] : sessions_) sessions_out_.server_back(id);
    if (lazy_) {
        // Its lists are read again: sessions answered from the cache hear what changed.
        last_answer_ = env_.now();
        refresh_quiet_ = false;
        refresh_catalog();
        env_.deadlines_changed();
    }
}

void Router::restore_child_state() {
    // A new child knows nothing of the sessions: resubscribe, reset the level, and tell the
    // sessions the lists may have changed. (A modern child keeps no such state.)
    child_level_.reset();
    if (modern_) return;
    for (const auto& [uri, who] : subscribers_) {
        if (who.empty()) continue;
        const std::uint64_t id =
            send_internal("resources/subscribe", {{"uri", uri}}, PendingKind::internal, uri);
        requests_.at(id).subscribes = true;
    }
    update_child_level();
    bool any_initialized = false;
    for (const auto& [id, s] : sessions_) any_initialized = any_initialized || s.ready;
    if (!any_initialized || served_version_.empty()) return;
    // A lazy server's lists are compared with its catalog instead (router_lazy.cpp).
    if (lazy_ && catalog_) return;
    for (std::string_view list : announced_lists()) broadcast(jsonrpc::list_changed(list));
}

std::vector<std::string_view> Router::announced_lists() const {
    // Only the lists the child says it announces changes of: a client told of another would
    // look for a list_changed the server never sends.
    std::vector<std::string_view> lists;
    const json* caps = json_read::object_at(initialize_result_, "capabilities");
    for (std::string_view list : {"tools", "prompts", "resources"}) {
        const json* cap = caps != nullptr ? json_read::object_at(*caps, list) : nullptr;
        if (cap != nullptr && json_read::bool_at(*cap, "listChanged") == true)
            lists.push_back(list);
    }
    return lists;
}

void Router::on_child_stopping() {
    if (!child_ready_) return;
    child_ready_ = false;
    catalog_current_ = false;
    // Requests waiting their turn (sharing = "serialized") never reached this child: they
    // wait for the next one like the lines that come from now on.
    const TimePoint deadline = env_.now() + config_.start_timeout;
    for (Waiting& waiting : serial_queue_)
        queue_.push_back(Queued{waiting.session, std::move(waiting.line), deadline, waiting.crashes});
    serial_queue_.clear();
    for (auto& [id, s] : sessions_) s.serial_bytes = 0;
    env_.deadlines_changed();
}

void Router::on_child_gone(const std::string& reason, std::string_view unwritten) {
    child_ready_ = false;
    catalog_current_ = false;
    discover_cache_.reset();  // the next process answers for itself
    // A session's forwarded requests are sent to the next child or answered as of unknown
    // outcome (router_replay.cpp); the rest fail as before.
    std::unordered_map<std::uint64_t, std::string> never_written = unwritten_requests(unwritten);
    std::vector<Replay> replays;
    for (auto& [child_id, p] : requests_) {
        SessionState* s = find(p.session);
        std::optional<ReplayVerdict> verdict;
        Replay replay;
        if (s != nullptr && p.session != 0 && p.kind == PendingKind::forward && !s->departed)
            verdict = decide_replay(child_id, p, never_written, replay);
        const bool again = verdict && sent_again(*verdict);
        settle(child_id, p, s, again ? Outcome::replayed : Outcome::child_died, 0);
        fail_waiters(p, "the server stopped before answering", reason);
        if (p.session == 0 || p.kind == PendingKind::internal) continue;
        if (s != nullptr) {
            s->in_flight.erase(p.original_id);
            if (again) {
                replays.push_back(std::move(replay));
                continue;
            }
            if (verdict) {
                sessions_out_.send(p.session, jsonrpc::error_with_outcome(
                                                  p.original_id, jsonrpc::kInternalError,
                                                  unknown_outcome_message(*verdict), reason,
                                                  "unknown"));
                continue;
            }
            if (p.kind == PendingKind::listen) {
                // The stream died with the child; ending it tells the client to listen again.
                sessions_out_.send(p.session,
                                   jsonrpc::cancelled(p.original_id, "the server restarted"));
                continue;
            }
            // A subscribe or setLevel that never got its answer is not counted as held.
            if (p.kind == PendingKind::subscribe) release_hold(p.session, p.uri);
            reply_error(p.session, p.original_id, jsonrpc::kInternalError,
                        "the server stopped before answering", reason);
        }
    }
    task_tokens_.clear();
    // Requests waiting their turn (sharing = "serialized") never reached the child: they
    // wait for the next one, behind the replayed ones (requeue, below).
    std::deque<Waiting> turns;
    turns.swap(serial_queue_);
    for (auto& [id, s] : sessions_) s.serial_bytes = 0;
    requests_.child_gone();
    // The child's own requests to sessions died with it: each session is told (a client may
    // be showing a prompt or a form for one), and late answers are dropped.
    for (const auto& [session_id, request] : child_requests_) {
        if (find(request.session) == nullptr) continue;
        sessions_out_.send(request.session, jsonrpc::cancelled(session_id, "the server restarted"));
    }
    child_requests_.clear();
    // Tasks and URL elicitations lived in the child that is gone: nothing of them carries
    // over to the next one.
    task_owners_.clear();
    for (auto& [id, session] : sessions_) {
        session.tasks.clear();
        session.ended_tasks.clear();
        session.ended_order.clear();
        session.url_elicitations.clear();
    }
    child_level_.reset();
    env_.deadlines_changed();
    if (departed_ > 0) sweep_departed();  // their requests failed with the child
    refresh_pending_ = 0;
    requeue(std::move(replays), std::move(turns), reason);
    if (lazy_ && catalog_) {
        // Sleeping, not away: its sessions are answered from the catalog again.
        take_handshake_from_catalog();
        return;
    }
    for (const auto& [id, s] : sessions_) sessions_out_.server_away(id, reason);
}

void Router::fail_waiting(const std::string& reason) {
    std::deque<Queued> queued;
    queued.swap(queue_);
    for (auto& [id, s] : sessions_) s.waiting_bytes = s.held.empty() ? 0 : s.waiting_bytes;
    for (Queued& q : queued)
        fail_queued(q, "the server is not available: " + reason, "server unavailable");
    env_.deadlines_changed();
}

}  // namespace mcpd
