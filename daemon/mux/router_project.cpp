// Router: settling a session's project, for sharing = "project" (docs/MULTIPLEXING.md).
//
// Once a session has initialized, mcpd asks its client for its roots (roots/list) unless it
// declared none, and holds the session's later lines until the daemon has decided which
// child serves that project: this one (release_held), another (release_session here,
// adopt_session there), or none (fail_held). Nothing of the session reaches a child before
// that, so moving it leaves no trace behind.
#include <string>

#include "common/json_read.h"
#include "common/log.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/project.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxHeldLines = 10000;

}  // namespace

void RouterEnvironment::project_reported(SessionId, const json*, std::string_view) {}
void RouterEnvironment::departed_session_gone(SessionId) {}
void RouterEnvironment::cancel_elsewhere(SessionId, std::string_view) {}

bool Router::awaiting_project(SessionId session) const {
    const auto it = sessions_.find(session);
    return it != sessions_.end() && it->second.awaiting_project;
}

void Router::settle_project(SessionState& s) {
    if (s.project_asked) return;
    s.project_asked = true;
    s.awaiting_project = true;
    if (json_read::object_at(s.capabilities, "roots") == nullptr) {
        env_.project_reported(s.id, nullptr, "its client declared no roots");
        return;
    }
    s.roots_request = "\"mcpd-roots-" + std::to_string(next_child_request_++) + "\"";
    roots_deadlines_[s.id] = env_.now() + kProjectWait;
    sessions_out_.send(
        s.id, "{\"jsonrpc\":\"2.0\",\"id\":" + s.roots_request + ",\"method\":\"roots/list\"}");
    env_.deadlines_changed();
}

bool Router::hold_for_project(SessionState& s, std::string_view line, const wire::Envelope& e) {
    if (!s.awaiting_project) return false;
    if (e.is_response() && !s.roots_request.empty() && e.id.in(line) == s.roots_request) {
        s.roots_request.clear();
        roots_deadlines_.erase(s.id);
        env_.deadlines_changed();
        const json answer = parse_forwarded(line);
        const json* result = json_read::object_at(answer, "result");
        if (result != nullptr) {
            env_.project_reported(s.id, result, {});
        } else {
            env_.project_reported(s.id, nullptr, "its client answered roots/list with an error");
        }
        return true;
    }
    if (s.held.size() >= kMaxHeldLines || !admit_waiting(s, line)) {
        if (e.is_request()) {
            reply_error(s.id, e.id.in(line), jsonrpc::kInternalError,
                        "too many requests waiting for the session's project to be settled");
        }
        return true;
    }
    s.held.emplace_back(line);
    return true;
}

bool Router::admit_waiting(SessionState& s, std::string_view line) {
    if (s.waiting_bytes >= kMaxWaitingBytes) return false;
    s.waiting_bytes += line.size();
    return true;
}

void Router::project_deadlines(TimePoint now) {
    std::vector<SessionId> late;
    for (const auto& [id, deadline] : roots_deadlines_) {
        if (deadline <= now) late.push_back(id);
    }
    for (SessionId id : late) {
        roots_deadlines_.erase(id);
        SessionState* s = find(id);
        if (s == nullptr) continue;
        s->roots_request.clear();  // a late answer is a stray response
        env_.project_reported(
            id, nullptr,
            "its client did not answer roots/list within " + format_duration(kProjectWait));
    }
}

void Router::release_held(SessionId session) {
    SessionState* s = find(session);
    if (s == nullptr || !s->awaiting_project) return;
    s->awaiting_project = false;
    s->project_settled = true;
    s->roots_request.clear();
    roots_deadlines_.erase(session);
    routing::TextList held;
    held.swap(s->held);
    s->waiting_bytes = 0;
    for (std::string& line : held) {
        if (find(session) == nullptr) return;  // a line ended it
        on_session_line(session, line);
    }
}

void Router::fail_held(SessionId session, std::string_view message) {
    SessionState* s = find(session);
    if (s == nullptr) return;
    s->awaiting_project = false;
    routing::TextList held;
    held.swap(s->held);
    s->waiting_bytes = 0;
    wire::Envelope e;
    for (std::string& line : held) {
        if (scanner_.scan(line, e) == wire::ScanStatus::ok && e.is_request() &&
            (e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer)) {
            reply_error(session, e.id.in(line), jsonrpc::kInternalError, message);
        }
    }
}

std::optional<Router::MovedSession> Router::release_session(SessionId session) {
    SessionState* s = find(session);
    if (s == nullptr || s->departed) return std::nullopt;
    MovedSession moved;
    moved.id = s->id;
    moved.attached_at = s->attached_at;
    moved.protocol = s->protocol;
    moved.served_version = served_version_;
    moved.capabilities = s->capabilities;
    moved.client_name = s->client_name;
    moved.client_version = s->client_version;
    moved.initialized = s->initialized;
    moved.ready = s->ready;
    moved.log_level = s->log_level;
    moved.subscriptions = s->subscriptions;
    moved.held = std::move(s->held);
    s->waiting_bytes = 0;
    moved.settled_before = s->project_settled;
    roots_deadlines_.erase(session);
    // Lines still waiting for this child to be ready come after those held.
    for (auto q = queue_.begin(); q != queue_.end();) {
        if (q->session != session) {
            ++q;
            continue;
        }
        moved.held.push_back(std::move(q->line));
        q = queue_.erase(q);
    }
    if (s->in_flight.empty() && s->waiting.empty()) {
        detach(session);
        return moved;
    }
    // Requests of its are at this child: they finish here (their answers, progress and
    // cancellations by the child still reach it), but nothing else of this child does.
    while (!s->waiting.empty()) drop_waiter(*s, std::string(s->waiting.begin()->first));
    fail_child_requests_of(session,
                           "the client session moved to its project's other server process");
    const std::set<std::string> uris = std::move(s->subscriptions);
    s->subscriptions.clear();
    const bool had_level = s->log_level.has_value();
    s->log_level.reset();
    s->ready = false;
    s->initialized = false;
    s->awaiting_project = false;
    s->departed = true;
    ++departed_;
    drop_subscriptions(session, uris);
    if (had_level) update_child_level();
    return moved;
}

void Router::sweep_departed() {
    std::vector<SessionId> gone;
    for (const auto& [id, s] : sessions_) {
        if (s.departed && s.in_flight.empty()) gone.push_back(id);
    }
    for (SessionId id : gone) {
        requests_.drop_progress_of(id);
        sessions_.erase(id);
        --departed_;
        env_.departed_session_gone(id);
    }
}

void Router::cancel_for_departed(SessionId session, std::string_view line) {
    SessionState* s = find(session);
    if (s == nullptr || !s->departed) return;
    std::string copy(line);
    wire::Envelope e;
    if (scanner_.scan(copy, e) != wire::ScanStatus::ok || !e.method_is("notifications/cancelled"))
        return;
    // Only a request of its here: anything else would be asked of the other children again.
    if (!s->in_flight.contains(std::string(e.request_id.in(copy)))) return;
    cancel_request(*s, copy, e);
    if (departed_ > 0) sweep_departed();
}

bool Router::departed(SessionId session) const {
    const auto it = sessions_.find(session);
    return it != sessions_.end() && it->second.departed;
}

void Router::roots_changed() {
    if (child_ready_ && !modern_) {
        env_.child_send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}");
    }
}

void Router::adopt_session(MovedSession moved) {
    attach(moved.id);
    SessionState& s = sessions_.at(moved.id);
    s.attached_at = moved.attached_at;
    s.protocol = std::move(moved.protocol);
    s.capabilities = std::move(moved.capabilities);
    s.client_name = std::move(moved.client_name);
    s.client_version = std::move(moved.client_version);
    s.initialized = moved.initialized;
    s.ready = moved.ready;
    s.project_asked = true;
    s.project_settled = true;
    // What the session was told stands: a child that turns out to speak another version
    // closes it, as a restart would.
    if (s.initialized && served_version_.empty()) served_version_ = moved.served_version;
    if (moved.log_level) {
        s.log_level = moved.log_level;
        update_child_level();
    }
    for (const std::string& uri : moved.subscriptions) {
        s.subscriptions.insert(uri);
        std::set<SessionId>& holders = subscribers_[uri];
        holders.insert(s.id);
        if (holders.size() == 1 && child_ready_ && !modern_) {
            const std::uint64_t id =
                send_internal("resources/subscribe", {{"uri", uri}}, PendingKind::internal, uri);
            requests_.at(id).subscribes = true;
        }
    }
    const SessionId id = s.id;
    // A session whose roots changed re-reads the lists: they are another process's now.
    if (moved.settled_before && child_ready_ && s.ready) {
        for (std::string_view list : announced_lists())
            sessions_out_.send(id, jsonrpc::list_changed(list));
    }
    for (std::string& line : moved.held) {
        if (find(id) == nullptr) return;
        on_session_line(id, line);
    }
}

void Router::compare_roots(const SessionState& s, std::string_view line) {
    if (roots_differ_noted_ || config_.sharing == config::Sharing::project) return;
    const json answer = parse_forwarded(line);
    const json* result = json_read::object_at(answer, "result");
    if (result == nullptr) return;
    Result<Project> project = project_from_roots(*result);
    if (!project) return;
    if (!first_roots_) {
        first_roots_ = std::move(project).value();
        return;
    }
    if (first_roots_->key() == project->key()) return;
    roots_differ_noted_ = true;
    env_.note("sessions report different roots (" + first_roots_->directory + " and " +
              project->directory + " for session " + std::to_string(s.id) +
              "), and every one of them uses this one process: set sharing = \"project\" for "
              "this server so that each project gets a process of its own");
}

}  // namespace mcpd
