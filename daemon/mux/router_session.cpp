// Router: what sessions send.
#include <algorithm>
#include <chrono>
#include <deque>

#include "common/json_read.h"
#include "common/log.h"
#include "daemon/mux/client_gate.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/mcp_versions.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxQueuedLines = 10000;

// The version to tell a session: its own when mcpd knows it and the child's is not older,
// otherwise the child's (the session may then disconnect, as the spec lets it).
std::string negotiate(const std::string& requested, const std::string& child) {
    if (speaks_legacy_version(requested) && requested <= child) {
        return requested;
    }
    return child;
}

// Whether the child's InitializeResult declares capabilities.tasks.list.
bool lists_tasks(const json& initialize_result) {
    const json* caps = json_read::object_at(initialize_result, "capabilities");
    const json* tasks = caps != nullptr ? json_read::object_at(*caps, "tasks") : nullptr;
    return tasks != nullptr && json_read::member(*tasks, "list") != nullptr;
}

}  // namespace

void Router::on_session_line(SessionId id, std::string& line) {
    if (line.capacity() < line.size() + wire::kScanPadding)
        line.reserve(line.size() + wire::kScanPadding);
    on_session_line(id, wire::PaddedText{line});
}

void Router::on_session_line(SessionId id, std::string_view line, const wire::Envelope& envelope) {
    on_session_line(id, wire::PaddedText{line}, &envelope);  // not read again: no padding needed
}

void Router::on_session_line(SessionId id, wire::PaddedText padded, const wire::Envelope* known) {
    try {
        route_session_line(id, padded, known);
    } catch (const std::exception& error) {
        contained(error, "a session's message");
        const wire::Envelope& e = known != nullptr ? *known : envelope_;
        const bool id_usable =
            e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer;
        if (find(id) != nullptr && e.is_request() && id_usable)
            reply_error(id, e.id.in(padded.text), jsonrpc::kInternalError,
                        "internal error: mcpd could not handle this request; it was not forwarded");
    }
}

void Router::route_session_line(SessionId id, wire::PaddedText padded, const wire::Envelope* known) {
    SessionState* s = find(id);
    if (s == nullptr) return;
    const std::string_view line = padded.text;
    if (s->legacy_elsewhere) {
        env_.pass_to_legacy(id, line);  // a line read or queued before the hand-over
        return;
    }
    wire::ScanStatus status = wire::ScanStatus::ok;
    if (known == nullptr) status = scanner_.scan(padded, envelope_);
    // A known envelope is read where it is, not copied: its owner (a group session) changes
    // it only between lines, never while one of its lines is routed here.
    const wire::Envelope& e = known != nullptr ? *known : envelope_;
    check_session_answer(id, line, status, e);
    // The same gate as a group session's (client_gate): a bad response is dropped, a bad
    // request answered by its id when it has exactly one.
    const GateVerdict verdict = check_client_message(status, e, line, scanner_.error());
    if (verdict.kind == GateVerdict::Kind::drop_response) {
        env_.note_repeated(
            "dropped a response from a session that is not valid JSON-RPC "
            "(responses are never answered)",
            "session " + std::to_string(id));
        return;
    }
    if (verdict.kind == GateVerdict::Kind::reply) {
        reply_error(id, verdict.raw_id, verdict.code, verdict.message);
        return;
    }
    const std::string_view raw_id = e.id.in(line);

    // A lazy server with no process answers what it can from its catalog (router_lazy.cpp).
    if (sleeping() && !s->awaiting_project && answer_from_catalog(*s, line, e)) return;
    if (catalog_current_ && !s->awaiting_project && answer_current_list(*s, line, e)) return;
    // Until the child is ready, everything but ping waits (bounded by start_timeout).
    if (!child_ready_ && !(e.is_request() && e.method_is("ping"))) {
        if (queue_.size() >= kMaxQueuedLines || !admit_waiting(*s, line)) {
            if (e.is_request()) {
                reply_error(id, raw_id, jsonrpc::kInternalError,
                            "too many requests waiting for the server to start");
            }
            return;
        }
        queue_.push_back(Queued{id, std::string(line), env_.now() + config_.start_timeout});
        env_.want_child();
        env_.deadlines_changed();
        return;
    }
    handle_session_message(*s, line, e);
}

void Router::handle_session_message(SessionState& s, std::string_view line,
                                    const wire::Envelope& e) {
    if (s.awaiting_project && hold_for_project(s, line, e)) return;
    if (e.is_request()) {
        handle_session_request(s, line, e);
    } else if (e.is_notification()) {
        handle_session_notification(s, line, e);
    } else {
        handle_session_response(s, line, e);
    }
}

void Router::handle_session_request(SessionState& s, std::string_view line,
                                    const wire::Envelope& e) {
    const std::string_view raw_id = e.id.in(line);
    const std::string_view method = e.method;
    if (method == "ping") {
        reply(s, raw_id, "{}");
        return;
    }
    if (modern_ && method == "initialize") {
        // A legacy client: never forwarded, since an initialize would turn the shared
        // process's era for everyone (docs/MULTIPLEXING.md, "Legacy clients of a dual-era
        // server").
        if (!s.initialized && env_.pass_to_legacy(s.id, line)) {
            s.legacy_elsewhere = true;
        } else {
            reply_error(s.id, raw_id, jsonrpc::kInvalidRequest,
                        "this server runs the stateless protocol (2026-07-28) and mcpd has no "
                        "process for the initialize handshake; set era = \"auto\" for it in the "
                        "registry (a dual-era server then serves legacy clients on a process of "
                        "their own), era = \"legacy\", or use a client that speaks 2026-07-28");
        }
        return;
    }
    // A modern child has no handshake: the session's own _meta travels with every request.
    if (!modern_) {
        if (method == "initialize") {
            if (s.initialized) {
                reply_error(s.id, raw_id, jsonrpc::kInvalidRequest,
                            "this session is already initialized");
                return;
            }
            answer_initialize(s, line, e);
            return;
        }
        if (!s.initialized) {
            if (method == "server/discover") {
                // A dual-era client probes first; "method not found" makes it fall back to
                // initialize.
                reply_error(s.id, raw_id, jsonrpc::kMethodNotFound,
                            "server/discover is not supported: this server speaks the initialize "
                            "handshake");
                return;
            }
            reply_error(s.id, raw_id, jsonrpc::kInvalidRequest,
                        "send initialize first: this session has not been initialized");
            return;
        }
    }
    if (outstanding(s, raw_id)) {
        reply_error(s.id, raw_id, jsonrpc::kInvalidRequest,
                    "duplicate request id: a request with this id is still in flight");
        return;
    }
    if (s.in_flight.bytes() + s.waiting.bytes() +
            RequestIds::cost(raw_id.size(), e.progress_token.length + e.uri.size()) >
        kMaxInFlightBytes) {
        reply_error(s.id, raw_id, jsonrpc::kInternalError,
                    "too many requests of this session are in flight (mcpd keeps at most 16 MiB "
                    "for them: 512 bytes a request plus its id, progress token and URI); wait "
                    "for answers before sending more");
        return;
    }
    if (!e.progress_token.empty() && !e.progress_token_valid) {
        reply_error(s.id, raw_id, jsonrpc::kInvalidParams,
                    "a progressToken must be a string or a number");
        return;
    }
    if (method == "tasks/get" || method == "tasks/result" || method == "tasks/cancel" ||
        method == "tasks/update") {
        const auto owner = task_owners_.find(e.task_id);
        if (owner == task_owners_.end() || owner->second != s.id) {
            reply_error(s.id, raw_id, jsonrpc::kInvalidParams,
                        "unknown task: no task with this id belongs to this session");
            return;
        }
    }
    if (modern_) {
        handle_modern_request(s, line, e);
        return;
    }
    if (method == "logging/setLevel") {
        set_level(s, line, e);
        return;
    }
    if (method == "resources/subscribe" || method == "resources/unsubscribe") {
        subscribe(s, line, e, method == "resources/subscribe");
        return;
    }
    if (method == "tasks/list" && !lists_tasks(initialize_result_)) {
        reply_error(s.id, raw_id, jsonrpc::kMethodNotFound,
                    "tasks/list is not available: the server has no task listing (its "
                    "capabilities do not declare tasks.list)");
        return;
    }
    if (config_.sharing == config::Sharing::serialized && serialized_busy()) {
        // Its turn comes when the request in flight is answered; then a server→client
        // request can only belong to the one session that is waiting.
        if (s.serial_bytes > 0 && s.serial_bytes + line.size() > kMaxWaitingBytes) {
            reply_error(s.id, raw_id, jsonrpc::kInternalError,
                        "too many requests of this session wait their turn at the server "
                        "(sharing = \"serialized\"; at most 64 MiB of them); wait for answers "
                        "before sending more");
            return;
        }
        s.serial_bytes += line.size();
        serial_queue_.push_back(Waiting{s.id, std::string(raw_id), std::string(line),
                                        replay_.routing_crashes});
        return;
    }
    forward_request(s, line, e);
}

void Router::answer_initialize(SessionState& s, std::string_view line, const wire::Envelope& e) {
    const json request = parse_forwarded(line);
    static const json kNoParams = json::object();
    const json* found = json_read::object_at(request, "params");
    const json& params = found != nullptr ? *found : kNoParams;
    const json* version = json_read::member(params, "protocolVersion");
    if (version != nullptr && !version->is_string()) {
        reply_error(s.id, e.id.in(line), jsonrpc::kInvalidParams,
                    std::string("invalid params: protocolVersion must be a string such as \"") +
                        child_version_ + "\", not " +
                        std::string(json_read::type_phrase(*version)));
        return;
    }
    const std::string requested = json_read::string_or(params, "protocolVersion", "");
    if (const json* caps = json_read::object_at(params, "capabilities")) s.capabilities = *caps;
    if (const json* info = json_read::object_at(params, "clientInfo")) {
        // Kept as long as the session and shown by status, sessions and stats: bounded.
        s.client_name = cut_to(json_read::string_or(*info, "name", ""), kMaxClientTextBytes);
        s.client_version = cut_to(json_read::string_or(*info, "version", ""), kMaxClientTextBytes);
    }
    s.protocol = negotiate(requested, child_version_);
    s.initialized = true;
    if (served_version_.empty()) served_version_ = child_version_;

    json result = initialize_result_;
    result["protocolVersion"] = s.protocol;
    // tasks.list stays: a listing is trimmed to the asking session's own tasks.
    reply(s, e.id.in(line), result.dump(-1, ' ', false, json::error_handler_t::replace));
}

void Router::set_level(SessionState& s, std::string_view line, const wire::Envelope& e) {
    const int severity = log_severity(e.level);
    if (severity < 0) {
        reply_error(s.id, e.id.in(line), jsonrpc::kInvalidParams,
                    "unknown log level; use debug, info, notice, warning, error, critical, alert "
                    "or emergency");
        return;
    }
    s.log_level = severity;
    if (child_level_ && *child_level_ <= severity) {
        // The child sends at least this much once it accepts the level it was last asked for.
        if (const auto asked = unanswered_level()) {
            wait_on(s, *asked, e.id.in(line));
        } else {
            reply(s, e.id.in(line), "{}");
        }
        update_child_level();  // this session may have been the most verbose
        return;
    }
    // This session is now the most verbose: its own request sets the child's level.
    child_level_ = severity;
    note_unset_view();
    forward_request(s, line, e, PendingKind::set_level);
}

void Router::subscribe(SessionState& s, std::string_view line, const wire::Envelope& e, bool on) {
    const std::string_view raw_id = e.id.in(line);
    if (e.uri.empty()) {
        reply_error(s.id, raw_id, jsonrpc::kInvalidParams, "params.uri is required");
        return;
    }
    auto& who = subscribers_[e.uri];
    if (on) {
        const bool first = who.empty();
        who.insert(s.id);
        s.subscriptions.insert(e.uri);
        if (first) {
            forward_request(s, line, e, PendingKind::subscribe, e.uri);
        } else if (const auto asked = unanswered_subscribe(e.uri)) {
            wait_on(s, *asked, raw_id);  // held only once the child takes the first
        } else {
            reply(s, raw_id, "{}");
        }
        return;
    }
    const bool held = who.erase(s.id) > 0;
    s.subscriptions.erase(e.uri);
    if (held && who.empty()) {
        subscribers_.erase(e.uri);
        forward_request(s, line, e, PendingKind::unsubscribe, e.uri);
        return;
    }
    if (who.empty()) subscribers_.erase(e.uri);
    reply(s, raw_id, "{}");
}

bool Router::outstanding(const SessionState& s, std::string_view raw_id) const {
    if (s.in_flight.contains(raw_id) || s.waiting.contains(raw_id))
        return true;
    return std::any_of(serial_queue_.begin(), serial_queue_.end(),
                       [&](const Waiting& w) { return w.session == s.id && w.raw_id == raw_id; });
}

void Router::forward_request(SessionState& s, std::string_view line, const wire::Envelope& e,
                             PendingKind kind, std::string uri) {
    const std::uint64_t child_id = env_.child_next_id();
    char id_digits[24];
    const std::string_view id_text = jsonrpc::id_text(child_id, id_digits);
    // Built where it is kept: a request's record is never moved on the way.
    Pending& p = requests_.emplace(child_id);
    p.session = s.id;
    p.kind = kind;
    p.original_id.assign(e.id.in(line));
    p.uri = std::move(uri);
    const TimePoint now = env_.now();
    // tasks/result blocks until the task ends, by design: no request_timeout for it.
    if (config_.request_timeout.count() > 0 && kind != PendingKind::listen &&
        !e.method_is("tasks/result")) {
        p.deadline = now + config_.request_timeout;
    }
    // The usual request is a tools/call: the methods with more to note are told apart from it
    // by their length first (method_is), and only they are compared further.
    if (!e.method_is("tools/call")) note_method_specifics(p, line, e);
    p.subscribes = kind == PendingKind::subscribe;
    if (kind == PendingKind::set_level) {
        p.level = log_severity(e.level);
        level_request_ = child_id;
    }

    wire::Replacements changes{{e.id, id_text}};
    if (!e.progress_token.empty()) {
        p.own_token = requests_.route_progress(s.id, e.progress_token.in(line), child_id);
        changes.push_back({e.progress_token, p.own_token});
    }
    std::string unescaped;  // a tool name with escapes, rarely
    const std::string_view tool =
        e.method_is("tools/call") ? e.name_in(line, unescaped) : std::string_view();
    if (kind != PendingKind::listen) {
        p.counted = stats_.request(s.counters, e.method, tool, line.size());
        p.sent = now;
        p.bytes_in = line.size();
        if (log_requests_)
            requests_.log_names(child_id, std::string(cut_to(e.method, kMaxNameBytes)),
                                std::string(cut_to(tool, kMaxNameBytes)));
    }
    s.in_flight.set(p.original_id, child_id,
                    p.uri.size() + p.task_id.size() + e.progress_token.length);
    const bool timed = p.deadline.has_value();
    p.crashes = replay_.routing_crashes;
    // Not used past the send: keep_for_replay finds the record again by its id.
    const bool sent = send_spliced_to_child(line, changes);
    if (kind == PendingKind::forward) keep_for_replay(child_id, line, e, tool, sent);
    if (timed) env_.deadlines_changed();
}

void Router::note_method_specifics(Pending& p, std::string_view line, const wire::Envelope& e) {
    if (e.method_is("tasks/result") || e.method_is("tasks/cancel")) p.task_id = e.task_id;
    if (e.method_is("tasks/get") || e.method_is("tasks/cancel")) p.reported_task = e.task_id;
    p.task_result = e.method_is("tasks/result");
    p.own_tasks_only = e.method_is("tasks/list");  // trimmed to this session's (send_own_tasks)
    p.discover = modern_ && e.method_is("server/discover");
    if (e.method_is("tools/list")) {
        p.lists_tools = true;
        p.first_page = !asks_later_page(line);
    }
}

void Router::handle_session_notification(SessionState& s, std::string_view line,
                                         const wire::Envelope& e) {
    const std::string_view method = e.method;
    if (method == "notifications/initialized") {
        if (s.initialized) {
            s.ready = true;
            if (config_.sharing == config::Sharing::project) settle_project(s);
        }
        return;  // mcpd initialized the child itself (and a modern child has no handshake)
    }
    if (!modern_ && !s.initialized) {
        // No revision negotiated yet: nothing of this session may reach the shared child.
        std::string detail = "session ";
        detail += std::to_string(s.id);
        detail += ", ";
        detail += log::excerpt(method);
        env_.note_repeated("dropped a notification from a client session before its initialize",
                           detail);
        return;
    }
    if (method == "notifications/cancelled") {
        cancel_request(s, line, e);
        return;
    }
    if (method == "notifications/progress") {
        // A session reporting progress on something the child asked it: only its own.
        const std::string_view token = e.reported_token.in(line);
        const bool asked =
            !token.empty() &&
            std::any_of(child_requests_.begin(), child_requests_.end(), [&](const auto& cr) {
                return cr.second.session == s.id && cr.second.progress_token == token;
            });
        if (asked) env_.child_send(line);
        return;
    }
    if (method == "notifications/roots/list_changed" &&
        config_.sharing == config::Sharing::project && s.project_settled) {
        // Its project may have changed: ask again; its later lines wait for the answer.
        s.project_asked = false;
        settle_project(s);
        return;
    }
    if (method == "notifications/roots/list_changed" || method == "notifications/tasks/status") {
        // mcpd declared roots without listChanged and no client tasks: the child expects
        // neither (and one session's roots are not every session's).
        return;
    }
    env_.child_send(line);
}

void Router::cancel_request(SessionState& s, std::string_view line, const wire::Envelope& e) {
    const std::string target(e.request_id.in(line));
    if (s.waiting.contains(target)) {
        drop_waiter(s, target);  // it never reached the child itself
        return;
    }
    // Still waiting its turn (serialized): it never reaches the child at all.
    const auto waiting =
        std::find_if(serial_queue_.begin(), serial_queue_.end(),
                     [&](const Waiting& w) { return w.session == s.id && w.raw_id == target; });
    if (!target.empty() && waiting != serial_queue_.end()) {
        s.serial_bytes -= std::min(s.serial_bytes, waiting->line.size());
        serial_queue_.erase(waiting);
        return;
    }
    const auto it = s.in_flight.find(target);
    if (e.request_id.empty() || it == s.in_flight.end()) {
        // Unknown or finished here; a session that moved may have it at its old child.
        if (!e.request_id.empty() && config_.sharing == config::Sharing::project)
            env_.cancel_elsewhere(s.id, line);
        return;
    }
    const std::uint64_t child_id = it->second.child_id;
    if (hand_over(child_id)) {
        // Another session waits for the same answer: the child keeps working on it.
        env_.deadlines_changed();
        return;
    }
    send_spliced_to_child(line, {{e.request_id, std::to_string(child_id)}});
    // The child should not answer now; if it does, the tombstone drops the reply.
    release(child_id, true);
    env_.deadlines_changed();
}

}  // namespace mcpd
