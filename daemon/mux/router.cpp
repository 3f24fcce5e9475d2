// Router: sessions arriving and leaving, requests settled, deadlines (the child coming and
// going is router_child_lifecycle.cpp).
#include "daemon/mux/router.h"

#include <algorithm>
#include <array>

#include "daemon/mux/jsonrpc.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 8> kLevels = {"debug", "info",     "notice", "warning",
                                                     "error", "critical", "alert",  "emergency"};

}  // namespace

int log_severity(std::string_view level) {
    for (std::size_t i = 0; i < kLevels.size(); ++i) {
        if (kLevels[i] == level) return static_cast<int>(i);
    }
    return -1;
}

std::string_view log_level_name(int severity) {
    if (severity < 0 || severity >= static_cast<int>(kLevels.size())) return "debug";
    return kLevels[static_cast<std::size_t>(severity)];
}

bool RouterEnvironment::pass_to_legacy(SessionId, std::string_view) {
    return false;
}

void RouterEnvironment::request_settled(const SettledRequest&) {}

void RouterEnvironment::note_repeated(std::string_view kind, std::string_view detail) {
    std::string message(kind);
    message += ": ";
    message += detail;
    note(message);
}

bool RouterEnvironment::child_send_spliced(std::span<const std::string_view> pieces) {
    return child_send(wire::joined(pieces));
}

void Router::send_spliced(SessionId session, std::string_view line,
                          const wire::Replacements& changes) {
    wire::splice(line, changes, pieces_);
    sessions_out_.send_spliced(session, pieces_);
}

bool Router::send_spliced_to_child(std::string_view line, const wire::Replacements& changes) {
    wire::splice(line, changes, pieces_);
    return env_.child_send_spliced(pieces_);
}

Router::Router(const config::ServerConfig& config, RouterEnvironment& env, SessionSink& sessions,
               std::size_t max_message_bytes)
    : config_(config), env_(env), sessions_out_(sessions), scanner_(max_message_bytes) {}

Router::SessionState* Router::find(SessionId id) {
    return sessions_.lookup(id);
}

void Router::attach(SessionId session) {
    SessionState& s = sessions_[session];
    s.id = session;
    s.attached_at = env_.now();
    stats_.attached();
    // A sleeping lazy server starts for a request that needs it, not for a session.
    if (!child_ready_ && !sleeping()) env_.want_child();
}

void Router::detach(SessionId session) {
    const auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    SessionState& s = it->second;

    std::erase_if(serial_queue_, [session](const Waiting& w) { return w.session == session; });
    s.serial_bytes = 0;
    while (!s.waiting.empty()) drop_waiter(s, std::string(s.waiting.begin()->first));
    // Its requests at the child: tell the child to stop working on them.
    std::vector<std::uint64_t> in_flight;
    for (const auto& [raw, entry] : s.in_flight) in_flight.push_back(entry.child_id);
    for (std::uint64_t child_id : in_flight) {
        if (hand_over(child_id)) continue;  // another session waits for the same answer
        if (child_ready_) {
            env_.child_send(jsonrpc::cancelled(child_id, "the client session disconnected"));
        }
        release(child_id, true);
    }
    // The child's requests waiting on it: answer them so the child is not left waiting.
    fail_child_requests_of(session, "the client session this request went to has disconnected");
    // Progress routes of its requests were released with them; stragglers go too.
    requests_.drop_progress_of(session);
    std::erase_if(queue_, [session](const Queued& q) { return q.session == session; });
    for (auto t = task_owners_.begin(); t != task_owners_.end();) {
        if (t->second != session) {
            ++t;
            continue;
        }
        task_tokens_.erase(t->first);
        t = task_owners_.erase(t);
    }

    const std::set<std::string> uris = std::move(s.subscriptions);
    if (s.departed) --departed_;
    roots_deadlines_.erase(session);
    sessions_.erase(it);
    drop_subscriptions(session, uris);
    // The child's level may be more verbose than those left need (or than it was kept for
    // sessions that never set one, if it was the last of them).
    update_child_level();
    env_.deadlines_changed();
}

std::string_view Router::protocol_of(SessionId session) const {
    const auto it = sessions_.find(session);
    return it == sessions_.end() ? std::string_view() : std::string_view(it->second.protocol);
}

void Router::for_each_session_counters(
    const std::function<void(SessionId, const CallCounters&)>& visit) const {
    for (const auto& [id, s] : sessions_) visit(id, s.counters);
}

std::vector<SessionSummary> Router::summaries() const {
    std::vector<SessionSummary> out;
    for (const auto& [id, s] : sessions_) {
        out.push_back(SessionSummary{id, s.client_name, s.client_version, s.protocol,
                                     s.in_flight.size(), s.attached_at});
    }
    return out;
}

void Router::fail_child_requests_of(SessionId session, std::string_view why) {
    for (auto cr = child_requests_.begin(); cr != child_requests_.end();) {
        if (cr->second.session != session) {
            ++cr;
            continue;
        }
        env_.child_send(jsonrpc::error(cr->second.child_id, jsonrpc::kInternalError, why));
        cr = child_requests_.erase(cr);
    }
}

void Router::drop_subscriptions(SessionId session, const std::set<std::string>& uris) {
    for (const std::string& uri : uris) {
        const auto sub = subscribers_.find(uri);
        if (sub == subscribers_.end()) continue;
        sub->second.erase(session);
        if (!sub->second.empty()) continue;
        subscribers_.erase(sub);
        // Nobody holds it any more: the child need not keep sending its updates.
        if (child_ready_)
            send_internal("resources/unsubscribe", {{"uri", uri}}, PendingKind::internal);
    }
}

void Router::release(std::uint64_t child_id, bool tombstoned, Outcome outcome) {
    std::optional<Pending> p = requests_.take(child_id);
    if (!p) return;
    SessionState* s = find(p->session);
    settle(child_id, *p, s, outcome, 0);
    if (!p->own_token.empty()) requests_.drop_progress(p->own_token);
    if (s != nullptr) s->in_flight.erase(p->original_id);
    if (tombstoned) requests_.tombstone(child_id);
    pump_serialized();
}

void Router::settle(std::uint64_t child_id, const Pending& p, SessionState* s, Outcome outcome,
                    std::size_t bytes_out) {
    if (p.counted == nullptr) return;
    const TimePoint now = env_.now();
    stats_.answered(p.counted, s != nullptr ? &s->counters : nullptr, outcome, bytes_out,
                    now - p.sent, now);
    const auto names = requests_.take_names(child_id);
    if (!names || !log_requests_) return;
    env_.request_settled(SettledRequest{
        p.session, s == nullptr ? std::string_view() : std::string_view(s->client_name),
        names->first, names->second, outcome, now - p.sent, p.bytes_in, bytes_out});
}

bool Router::serialized_busy() const {
    // An open listen stream is not a request waiting for its answer.
    return std::any_of(requests_.begin(), requests_.end(), [](const auto& p) {
        return p.second.session != 0 && p.second.kind != PendingKind::listen;
    });
}

std::optional<SessionId> Router::only_busy_session() const {
    std::optional<SessionId> only;
    for (const auto& [id, p] : requests_) {
        if (p.session == 0 || p.kind == PendingKind::listen) continue;
        if (only && *only != p.session) return std::nullopt;
        // A session that moved to another child cannot be asked anything of this one.
        if (const auto s = sessions_.find(p.session); s != sessions_.end() && s->second.departed)
            return std::nullopt;
        only = p.session;
    }
    return only;
}

void Router::pump_serialized() {
    while (!serial_queue_.empty() && child_ready_ && !serialized_busy()) {
        auto [session, raw_id, line, crashes] = std::move(serial_queue_.front());
        serial_queue_.pop_front();
        SessionState* s = find(session);
        if (s == nullptr) continue;
        s->serial_bytes -= std::min(s->serial_bytes, line.size());
        wire::Envelope e;
        if (scanner_.scan(line, e) != wire::ScanStatus::ok) continue;
        const ReplayState::Routing replayed(replay_, crashes);
        forward_request(*s, line, e);
    }
}

void Router::flush_queue() {
    std::deque<Queued> queued;
    queued.swap(queue_);
    for (auto& [id, s] : sessions_) s.waiting_bytes = s.held.empty() ? 0 : s.waiting_bytes;
    for (Queued& q : queued) {
        if (find(q.session) == nullptr) continue;
        // A replayed request takes along how many children died with it (router_replay.cpp).
        const ReplayState::Routing replayed(replay_, q.crashes);
        on_session_line(q.session, q.line);
    }
    env_.deadlines_changed();
}

std::optional<TimePoint> Router::next_deadline() const {
    std::optional<TimePoint> next;
    auto consider = [&next](TimePoint t) {
        if (!next || t < *next) next = t;
    };
    if (!queue_.empty()) consider(queue_.front().deadline);
    for (const auto& [id, p] : requests_) {
        if (p.deadline) consider(*p.deadline);
    }
    for (const auto& [id, deadline] : roots_deadlines_) consider(deadline);
    if (const auto idle = idle_deadline()) consider(*idle);
    if (const auto answer = next_client_answer_deadline()) consider(*answer);
    return next;
}

void Router::on_timer() {
    const TimePoint now = env_.now();
    project_deadlines(now);
    if (const auto idle = idle_deadline(); idle && *idle <= now) {
        last_answer_ = now;  // asked once per idle time, not on every turn
        env_.child_idle();
    }
    expire_child_requests(now);
    while (!queue_.empty() && queue_.front().deadline <= now) {
        Queued q = std::move(queue_.front());
        queue_.pop_front();
        if (SessionState* owner = find(q.session))
            owner->waiting_bytes -= std::min(owner->waiting_bytes, q.line.size());
        fail_queued(q,
                    "the server did not become ready within start_timeout (" +
                        format_duration(config_.start_timeout) + ")",
                    "server not ready");
    }
    std::vector<std::uint64_t> expired;
    for (const auto& [id, p] : requests_) {
        if (p.deadline && *p.deadline <= now) expired.push_back(id);
    }
    for (std::uint64_t id : expired) {
        const Pending p = requests_.at(id);
        env_.child_send(jsonrpc::cancelled(id, "request_timeout"));
        release(id, true, Outcome::timeout);
        std::string message = "no answer within request_timeout (";
        message += format_duration(config_.request_timeout);
        message += "); the request was cancelled";
        // Cancelled unanswered: what it asked to hold is not held, by its sender or the rest.
        if (p.kind == PendingKind::subscribe) release_hold(p.session, p.uri);
        if (p.level && id == level_request_) child_level_.reset();
        reply_error(p.session, p.original_id, jsonrpc::kInternalError, message, "request timeout");
        fail_waiters(p, message, "request timeout");
    }
    // One of those may have been the last request of a session that moved to another child.
    if (departed_ > 0) sweep_departed();
    env_.deadlines_changed();
}

void Router::broadcast(std::string_view line) {
    for (const auto& [id, s] : sessions_) {
        if (s.ready) sessions_out_.send(id, line);
    }
}

void Router::contained(const std::exception& error, std::string_view what) {
    ++contained_failures_;
    if (contained_failures_ == 1 || contained_failures_ % 100 == 0)
        env_.note("a bug in mcpd: handling " + std::string(what) + " failed (" + error.what() +
                  "); it was answered with an error and nothing else was affected (" +
                  std::to_string(contained_failures_) + " so far)");
}

void Router::reply(SessionState& s, std::string_view raw_id, std::string_view result_json) {
    sessions_out_.send(s.id, jsonrpc::result(raw_id, result_json));
}

void Router::reply_error(SessionId s, std::string_view raw_id, int code, std::string_view message,
                         std::string_view reason) {
    sessions_out_.send(s, jsonrpc::error(raw_id, code, message, reason));
}

std::size_t Router::unanswered(SessionId session) const {
    std::size_t count = 0;
    if (const auto it = sessions_.find(session); it != sessions_.end()) {
        // A listen stream is never answered while it lives: a client that closed its input
        // has no use for it, and leaving cancels it at the child.
        for (const auto& [raw, entry] : it->second.in_flight) {
            const Pending* p = requests_.find(entry.child_id);
            count += p != nullptr && p->kind == PendingKind::listen ? 0 : 1;
        }
        count += it->second.waiting.size();
    }
    for (const Queued& queued : queue_) count += queued.session == session ? 1 : 0;
    for (const Waiting& waiting : serial_queue_) count += waiting.session == session ? 1 : 0;
    return count;
}

}  // namespace mcpd
