// Router: what every session of a legacy child shares — subscriptions counted per URI and the
// child's log level — and the sessions that wait for the child's answer to the request that
// changes it (docs/MULTIPLEXING.md, "Legacy children").
#include <algorithm>

#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/mcp_versions.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

std::uint64_t Router::send_internal(std::string_view method, const json& params, PendingKind kind,
                                    std::string uri) {
    const std::uint64_t id = env_.child_next_id();
    Pending p;
    p.kind = kind;
    p.uri = std::move(uri);
    requests_.add(id, std::move(p));
    json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
    if (modern_) {
        // A modern child reads each request's revision and client from its own _meta.
        request["params"]["_meta"] = {
            {kMetaProtocolVersion, child_version_},
            {kMetaClientCapabilities, json::object()},
            {kMetaClientInfo, {{"name", "mcpd"}, {"version", MCPD_VERSION}}}};
    }
    env_.child_send(request.dump());
    return id;
}

bool Router::note_unset_view() {
    const bool unset = std::any_of(sessions_.begin(), sessions_.end(), [](const auto& entry) {
        return entry.second.ready && !entry.second.log_level;
    });
    if (!unset) {
        unset_view_.reset();
    } else if (child_level_ && (!unset_view_ || *child_level_ < *unset_view_)) {
        unset_view_ = child_level_;
    }
    return unset;
}

void Router::update_child_level() {
    // Sessions that never set a level get all the child sends: while one is attached the
    // child is never made quieter than it has been for them, so nobody leaving (or asking
    // for less) takes messages from them. Those who set a level are filtered to it.
    std::optional<int> most_verbose = note_unset_view() ? unset_view_ : std::nullopt;
    for (const auto& [id, s] : sessions_) {
        if (s.log_level && (!most_verbose || *s.log_level < *most_verbose)) {
            most_verbose = s.log_level;
        }
    }
    if (!most_verbose || most_verbose == child_level_ || !child_ready_) return;
    child_level_ = most_verbose;
    level_request_ = send_internal("logging/setLevel", {{"level", log_level_name(*most_verbose)}},
                                   PendingKind::internal);
    requests_.at(level_request_).level = most_verbose;
    note_unset_view();
}

std::optional<std::uint64_t> Router::unanswered_subscribe(const std::string& uri) const {
    for (const auto& [id, p] : requests_) {
        if (p.subscribes && p.uri == uri) return id;
    }
    return std::nullopt;
}

std::optional<std::uint64_t> Router::unanswered_level() const {
    const Pending* p = requests_.find(level_request_);
    if (p == nullptr || !p->level) return std::nullopt;
    return level_request_;
}

void Router::wait_on(SessionState& s, std::uint64_t child_id, std::string_view raw_id) {
    Pending& p = requests_.at(child_id);
    p.waiters.push_back(Waiter{s.id, std::string(raw_id)});
    s.waiting.set(raw_id, child_id, p.uri.size());
}

void Router::drop_waiter(SessionState& s, std::string_view raw_id) {
    const auto it = s.waiting.find(raw_id);
    if (it == s.waiting.end()) return;
    if (Pending* p = requests_.find(it->second.child_id)) {
        std::erase_if(p->waiters,
                      [&](const Waiter& w) { return w.session == s.id && w.raw_id == raw_id; });
    }
    s.waiting.erase(it);
}

void Router::answer_waiters(const Pending& p, std::string_view line, const wire::Envelope& e) {
    for (const Waiter& w : p.waiters) {
        SessionState* s = find(w.session);
        if (s == nullptr) continue;
        s->waiting.erase(w.raw_id);
        if (!e.has_error) {
            reply(*s, w.raw_id, "{}");
            continue;
        }
        if (p.subscribes) release_hold(w.session, p.uri);
        send_spliced(w.session, line, {{e.id, w.raw_id}});
    }
}

void Router::fail_waiters(const Pending& p, std::string_view message, std::string_view reason) {
    for (const Waiter& w : p.waiters) {
        SessionState* s = find(w.session);
        if (s == nullptr) continue;
        s->waiting.erase(w.raw_id);
        if (p.subscribes) release_hold(w.session, p.uri);
        reply_error(w.session, w.raw_id, jsonrpc::kInternalError, message, reason);
    }
}

bool Router::hand_over(std::uint64_t child_id) {
    Pending* found = requests_.find(child_id);
    if (found == nullptr || found->waiters.empty()) return false;
    Pending& p = *found;
    const Waiter next = p.waiters.front();
    p.waiters.erase(p.waiters.begin());
    if (SessionState* old = find(p.session)) old->in_flight.erase(p.original_id);
    // Progress on it was the old sender's; the new one never asked for any.
    if (!p.own_token.empty()) requests_.drop_progress(p.own_token);
    p.own_token.clear();
    p.session = next.session;
    p.original_id = next.raw_id;
    if (SessionState* s = find(next.session)) {
        s->waiting.erase(next.raw_id);
        s->in_flight.set(next.raw_id, child_id, p.uri.size());
    }
    return true;
}

void Router::release_hold(SessionId session, const std::string& uri) {
    if (SessionState* s = find(session)) s->subscriptions.erase(uri);
    const auto sub = subscribers_.find(uri);
    if (sub == subscribers_.end()) return;
    sub->second.erase(session);
    if (sub->second.empty()) subscribers_.erase(sub);
}

}  // namespace mcpd
