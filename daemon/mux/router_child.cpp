// Router: what the child sends.
#include <array>
#include <charconv>
#include <deque>

#include "common/json_read.h"
#include "common/log.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

namespace {

// URLElicitationRequiredError (2025-11-25).
constexpr std::int64_t kUrlElicitationRequired = -32042;

// What the child may send a session only when the session negotiated that revision or a
// later one. A row naming a param applies to a request carrying it.
struct Introduced {
    std::string_view method;
    std::string_view param;
    std::string_view version;
};
constexpr std::array<Introduced, 8> kIntroduced = {{
    {"elicitation/create", {}, "2025-06-18"},
    {"sampling/createMessage", "tools", "2025-11-25"},
    {"tasks/get", {}, "2025-11-25"},
    {"tasks/result", {}, "2025-11-25"},
    {"tasks/list", {}, "2025-11-25"},
    {"tasks/cancel", {}, "2025-11-25"},
    {"notifications/tasks/status", {}, "2025-11-25"},
    {"notifications/elicitation/complete", {}, "2025-11-25"},
}};

// Whether a session whose level is `level` (none: unfiltered) hears a message of `severity`.
bool hears(std::optional<int> level, int severity) {
    return !level || severity < 0 || severity >= *level;
}

bool is_terminal(std::string_view task_status) {
    return task_status == "completed" || task_status == "failed" || task_status == "cancelled";
}

// Whether `uri` is `subscribed` or below it (the spec lets an update name a sub-resource).
bool covers(const std::string& subscribed, const std::string& uri) {
    if (uri == subscribed) return true;
    if (uri.size() <= subscribed.size() || uri.compare(0, subscribed.size(), subscribed) != 0) {
        return false;
    }
    return subscribed.back() == '/' || uri[subscribed.size()] == '/' || uri[subscribed.size()] == '?' ||
           uri[subscribed.size()] == '#';
}

}  // namespace

std::string Router::task_id_of(const wire::Envelope& e, std::string_view line) {
    // The raw token may hold escapes; owners are stored by the string the scanner decodes.
    std::string task;
    if (!wire::decode_string(e.related_task_id.in(line), task)) task.clear();
    return task;
}

json Router::parse_forwarded(std::string_view line) {
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_discarded())
        parsed = json::parse(wire::without_lone_surrogates(line), nullptr, false);
    return parsed;
}

void Router::mark_task_ended(const std::string& task_id) {
    // Its progress token lived as long as the task: nothing more may come for it.
    if (const auto token = task_tokens_.find(task_id); token != task_tokens_.end()) {
        requests_.drop_progress(token->second);
        task_tokens_.erase(token);
    }
    const auto owner = task_owners_.find(task_id);
    if (owner == task_owners_.end()) return;
    SessionState* s = find(owner->second);
    if (s == nullptr || !s->ended_tasks.insert(task_id).second) return;
    // The owner may still fetch an ended task's result, for a while: the oldest ended tasks
    // are forgotten, so a long session does not keep every task it ever ran.
    s->ended_order.push_back(task_id);
    while (s->ended_order.size() > kMaxEndedTasks) {
        const std::string oldest = std::move(s->ended_order.front());
        s->ended_order.pop_front();
        s->ended_tasks.erase(oldest);
        s->tasks.erase(oldest);
        task_owners_.erase(oldest);
    }
}

void Router::remember_required_elicitations(SessionState& s, std::string_view line) {
    const json response = parse_forwarded(line);
    const json* error = json_read::object_at(response, "error");
    const json* data = error != nullptr ? json_read::object_at(*error, "data") : nullptr;
    const json* list = data != nullptr ? json_read::member(*data, "elicitations") : nullptr;
    if (list == nullptr || !list->is_array()) return;
    for (const json& elicitation : *list) {
        if (const std::string* id = json_read::string_at(elicitation, "elicitationId")) {
            s.url_elicitations.insert(*id);
        }
    }
}

void Router::on_child_message(std::string_view line, const wire::Envelope& e) {
    try {
        route_child_message(line, e);
    } catch (const std::exception& error) {
        contained(error, "a message from the server");
        if (e.is_request() && (e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer))
            env_.child_send(jsonrpc::error(e.id.in(line), jsonrpc::kInternalError,
                                           "internal error: mcpd could not handle this request"));
    }
}

void Router::route_child_message(std::string_view line, const wire::Envelope& e) {
    // Ids are rewritten in place, which only works for one string or integer token.
    if (e.malformed || e.id_kind == wire::IdKind::invalid ||
        (e.is_request() && e.id_kind == wire::IdKind::null)) {
        env_.note_repeated("dropped a message from the server that is not valid JSON-RPC",
                           "a repeated or invalid id, a method that is not a string, or params "
                           "that are not an object");
        return;
    }
    if (e.is_response() && e.id_kind == wire::IdKind::null) {
        answer_null_id(line, e);
        return;
    }
    if (e.is_response()) {
        handle_child_response(line, e);
        if (departed_ > 0) sweep_departed();  // the answer may have been a moved session's last
    } else if (e.is_notification()) {
        handle_child_notification(line, e);
    } else if (e.is_request()) {
        handle_child_request(line, e);
    }
}

void Router::handle_child_response(std::string_view line, const wire::Envelope& e) {
    const std::optional<std::uint64_t> child_id =
        e.id_kind == wire::IdKind::integer ? jsonrpc::given_id(e.id.in(line)) : std::nullopt;
    // Out of the table, but not moved: the record lives in its node until this returns.
    InFlight::Map::node_type taken;
    if (child_id) taken = requests_.extract(*child_id);
    if (taken.empty()) {
        if (child_id && requests_.tombstoned(*child_id)) return;  // answered after a cancel
        env_.note_repeated("dropped a response with an id mcpd never sent",
                           e.id.empty() ? std::string("(none)") : log::excerpt(e.id.in(line)));
        return;
    }
    Pending& p = taken.mapped();
    SessionState* s = find(p.session);
    settle(*child_id, p, s,
           e.has_error ? Outcome::error : e.is_error ? Outcome::tool_error : Outcome::reply,
           line.size());
    pump_serialized();
    if (!p.own_token.empty()) {
        if (!e.created_task_id.empty() && e.has_result) {
            task_tokens_[e.created_task_id] = p.own_token;  // progress continues for the task
        } else {
            requests_.drop_progress(p.own_token);
        }
    }
    if (!p.task_id.empty()) {
        // tasks/result answered (the task is over) or tasks/cancel accepted: its progress ends.
        if (const auto token = task_tokens_.find(p.task_id); token != task_tokens_.end()) {
            requests_.drop_progress(token->second);
            task_tokens_.erase(token);
        }
    }
    // The owner may still fetch an ended task's result; only requests tied to it are refused.
    if (p.task_result) mark_task_ended(p.task_id);
    if (!p.reported_task.empty() && e.has_result && is_terminal(e.status))
        mark_task_ended(p.reported_task);
    if (s != nullptr) s->in_flight.erase(p.original_id);
    if (p.deadline) env_.deadlines_changed();

    if (p.kind == PendingKind::subscribe && e.has_error && s != nullptr) {
        release_hold(p.session, p.uri);  // not subscribed after all
    }
    // A refused level is unknown at the child, unless a later setLevel already replaced it.
    if (p.level && e.has_error && *child_id == level_request_) child_level_.reset();
    answer_waiters(p, line, e);
    if (p.lists_tools && e.has_result) note_listed_tools(line, p.first_page);
    if (p.discover && e.has_result) {
        const json answer = parse_forwarded(line);
        if (const json* result = json_read::object_at(answer, "result")) {
            discover_cache_ = *result;
            discover_received_ = env_.now();
        }
    }
    if (lazy_) {
        last_answer_ = env_.now();
        if (p.catalog_list) on_catalog_page(p, line, e);
        if (requests_.empty()) env_.deadlines_changed();  // its idle time starts now
    }
    if (p.session == 0 || p.kind == PendingKind::internal || s == nullptr) return;
    if (!e.created_task_id.empty()) {
        task_owners_[e.created_task_id] = p.session;
        s->tasks.insert(e.created_task_id);
        s->ended_tasks.erase(e.created_task_id);
    }
    if (e.has_error && e.error_code == kUrlElicitationRequired)
        remember_required_elicitations(*s, line);
    if (p.own_tasks_only && e.has_result) {
        send_own_tasks(p.session, line, e, p.original_id);
        return;
    }
    wire::Replacements changes{{e.id, p.original_id}};
    // A listen stream's graceful end names the stream in result._meta too (by our id).
    if (p.kind == PendingKind::listen && !e.subscription_id.empty() &&
        e.subscription_id.in(line) == e.id.in(line)) {
        changes.push_back({e.subscription_id, p.original_id});
    }
    wire::splice(line, changes, pieces_);
    sessions_out_.send_answer(p.session, pieces_, e, changes);
}

void Router::answer_null_id(std::string_view line, const wire::Envelope& e) {
    // JSON-RPC's answer to a line the child could not read (a parse error) cannot say which
    // request that line was. With one request at the child there is no doubt.
    std::string start = "the line begins ";
    start += log::excerpt(line, 120);
    if (!e.has_error) {
        env_.note_repeated("dropped a result from the server whose id is null", start);
        return;
    }
    if (requests_.size() != 1) {
        std::string detail = requests_.empty() ? std::string("no request is")
                                               : std::to_string(requests_.size()) + " requests are";
        detail += " at the server, so it cannot be told which one failed; ";
        detail += start;
        env_.note_repeated("dropped an error from the server whose id is null", detail);
        return;
    }
    const std::string child_id = std::to_string(requests_.begin()->first);
    std::string answer;
    wire::splice(line, {{e.id, child_id}}, answer);
    wire::Envelope envelope;
    if (scanner_.scan(answer, envelope) != wire::ScanStatus::ok) return;
    std::string detail = "it answers request ";
    detail += child_id;
    detail += ", the only one at the server; ";
    detail += start;
    env_.note_repeated("an error from the server whose id is null failed the only request it had",
                       detail);
    handle_child_response(answer, envelope);
}

bool Router::on_child_reply_lost(std::string_view raw_id, std::string_view message,
                                 std::string_view reason) {
    const std::optional<std::uint64_t> child_id = jsonrpc::given_id(raw_id);
    if (!child_id || !requests_.contains(*child_id)) return false;
    // As if the child had answered with this error: the usual bookkeeping, then the session.
    std::string line = jsonrpc::error(raw_id, jsonrpc::kInternalError, message, reason);
    wire::Envelope e;
    if (scanner_.scan(line, e) != wire::ScanStatus::ok) return false;
    handle_child_response(line, e);
    return true;
}

void Router::handle_child_notification(std::string_view line, const wire::Envelope& e) {
    const std::string_view method = e.method;
    if (method == "notifications/message" && !e.related_task_id.empty()) {
        // A task's log line is its owner's alone, at the level that session asked for; who
        // happens to be busy has nothing to do with it.
        const auto owner = task_owners_.find(task_id_of(e, line));
        const SessionState* s = owner != task_owners_.end() ? find(owner->second) : nullptr;
        if (s != nullptr && hears(s->log_level, log_severity(e.level)))
            sessions_out_.send(s->id, line);
        return;
    }
    if (modern_ && method != "notifications/progress") {
        handle_modern_notification(line, e);
        return;
    }
    if (method == "notifications/progress") {
        // progressToken sits in params, not params._meta, on the notification itself.
        const ProgressRoute* route =
            e.reported_token.empty() ? nullptr : requests_.progress_route(e.reported_token.in(line));
        if (route != nullptr) {
            send_spliced(route->session, line, {{e.reported_token, route->original_token}});
            // Reported to the client: the request is under way, never to be replayed.
            if (Pending* p = requests_.find(route->child_id)) p->progressed = true;
        }
        return;
    }
    if (method == "notifications/tasks/status" && is_terminal(e.status)) mark_task_ended(e.task_id);
    if (method == "notifications/elicitation/complete") {
        // URL mode: only the session that was sent the elicitation waits for its completion.
        for (auto& [id, s] : sessions_) {
            if (s.url_elicitations.erase(e.elicitation_id) == 0) continue;
            if (revision_has(s, e, line)) sessions_out_.send(id, line);
            return;
        }
        env_.note_repeated("dropped an elicitation completion no client session is waiting for",
                           log::excerpt(e.elicitation_id));
        return;
    }
    if (!e.related_task_id.empty()) {
        // Tied to a task (a log line or anything else about it): only its owner hears it.
        const auto owner = task_owners_.find(task_id_of(e, line));
        const SessionState* s = owner != task_owners_.end() ? find(owner->second) : nullptr;
        if (s != nullptr && revision_has(*s, e, line)) sessions_out_.send(s->id, line);
        return;
    }
    if (method == "notifications/message") {
        const int severity = log_severity(e.level);
        for (const auto& [id, s] : sessions_) {
            if (s.ready && hears(s.log_level, severity)) sessions_out_.send(id, line);
        }
        return;
    }
    if (method == "notifications/resources/updated") {
        std::set<SessionId> targets;  // once each, even when holding a URI and its parent
        for (const auto& [uri, who] : subscribers_) {
            if (covers(uri, e.uri)) targets.insert(who.begin(), who.end());
        }
        for (SessionId id : targets) {
            const SessionState* s = find(id);
            if (s != nullptr && s->ready) sessions_out_.send(id, line);
        }
        return;
    }
    if (method == "notifications/cancelled") {
        // The child gives up on a request it sent a session.
        for (auto cr = child_requests_.begin(); cr != child_requests_.end(); ++cr) {
            if (cr->second.child_id != e.request_id.in(line)) continue;
            send_spliced(cr->second.session, line, {{e.request_id, cr->first}});
            child_requests_.erase(cr);
            return;
        }
        return;
    }
    if (method == "notifications/tasks/status") {
        const auto owner = task_owners_.find(e.task_id);
        const SessionState* s = owner != task_owners_.end() ? find(owner->second) : nullptr;
        if (s != nullptr && revision_has(*s, e, line)) sessions_out_.send(s->id, line);
        return;
    }
    if (lazy_ && child_ready_ && method.ends_with("/list_changed") &&
        (method == "notifications/tools/list_changed" ||
         method == "notifications/prompts/list_changed" ||
         method == "notifications/resources/list_changed")) {
        // The cache follows; the sessions hear it from the child itself, below.
        refresh_quiet_ = true;
        refresh_catalog();
    }
    // list_changed and anything else connection-wide: every session whose revision has it.
    for (const auto& [id, s] : sessions_) {
        if (s.ready && revision_has(s, e, line)) sessions_out_.send(id, line);
    }
}

std::string_view Router::newer_revision_needed(const SessionState& s, const wire::Envelope& e,
                                               std::string_view line) const {
    // A modern session (no negotiated revision) carries its own in every request.
    if (s.protocol.empty()) return {};
    std::string_view needed;
    json message;
    bool parsed = false;
    for (const Introduced& row : kIntroduced) {
        if (row.method != e.method || row.version <= s.protocol || row.version <= needed) continue;
        if (!row.param.empty()) {
            if (!parsed) message = parse_forwarded(line);
            parsed = true;
            const json* params = json_read::object_at(message, "params");
            if (params == nullptr || json_read::member(*params, row.param) == nullptr) continue;
        }
        needed = row.version;
    }
    return needed;
}

bool Router::revision_has(const SessionState& s, const wire::Envelope& e, std::string_view line) {
    const std::string_view needed = newer_revision_needed(s, e, line);
    if (needed.empty()) return true;
    std::string detail = "session ";
    detail += std::to_string(s.id);
    detail += ", ";
    detail += log::excerpt(e.method);
    detail += " (needs ";
    detail += needed;
    detail += ", it negotiated ";
    detail += s.protocol;
    detail += ')';
    env_.note_repeated(
        "dropped a notification the client session's protocol revision does not have", detail);
    return false;
}

}  // namespace mcpd
