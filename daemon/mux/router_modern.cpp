// The Router toward a modern (2026-07-28) child: the requests mcpd answers, trims or filters
// for a session (server/discover from the cache, listen streams, a session's own tasks), and
// the notifications that end or feed a listen stream.
#include <string>

#include "common/json_read.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/router.h"

namespace mcpd {

using json = nlohmann::json;

void Router::handle_modern_request(SessionState& s, std::string_view line,
                                   const wire::Envelope& e) {
    // No shared state to aggregate on a stateless child: most requests pass as they are.
    const std::string_view raw_id = e.id.in(line);
    if (e.method_is("subscriptions/listen")) {
        forward_listen(s, line, e);
        return;
    }
    if (e.method_is("server/discover")) {
        if (const json* cached = fresh_discover()) {
            reply(s, raw_id, cached->dump(-1, ' ', false, json::error_handler_t::replace));
            return;
        }
        forward_request(s, line, e);  // its answer refreshes the cache
        return;
    }
    if (e.method_is("tasks/list")) {
        if (!child_has_tasks()) {
            reply_error(s.id, raw_id, jsonrpc::kMethodNotFound,
                        "tasks/list is not available: the server does not offer tasks");
            return;
        }
        // The child lists every session's tasks: the answer is trimmed to this session's.
        forward_request(s, line, e);
        return;
    }
    forward_request(s, line, e);
}

void Router::forward_listen(SessionState& s, std::string_view line, const wire::Envelope& e) {
    // A stream watching another session's task would tell this one about it: such ids go.
    // The tasks extension names the filter `notifications`; `filter` is read the same way.
    std::deque<std::string> kept;
    wire::Replacements changes;
    for (const std::string_view filter : {"notifications", "filter"}) {
        for (const RawArray& ids : raw_arrays_at(line, {"params", filter, "taskIds"})) {
            std::string& text = kept.emplace_back("[");
            bool pruned = false;
            for (const wire::Span element : ids.elements) {
                std::string task;
                const auto owner = wire::decode_string(element.in(line), task)
                                       ? task_owners_.find(task)
                                       : task_owners_.end();
                if (owner == task_owners_.end() || owner->second != s.id) {
                    pruned = true;
                    continue;
                }
                if (text.size() > 1) text += ',';
                text += element.in(line);
            }
            text += ']';
            if (pruned) changes.push_back({ids.span, text});
        }
    }
    if (changes.empty()) {
        forward_request(s, line, e, PendingKind::listen);
        return;
    }
    std::string trimmed;
    wire::splice(line, changes, trimmed);
    wire::Envelope envelope;
    if (scanner_.scan(trimmed, envelope) != wire::ScanStatus::ok) {
        reply_error(s.id, e.id.in(line), jsonrpc::kInternalError,
                    "internal error: mcpd could not filter this listen request's taskIds");
        return;
    }
    forward_request(s, trimmed, envelope, PendingKind::listen);
}

const json* Router::fresh_discover() const {
    if (!discover_cache_) return nullptr;
    const json& result = *discover_cache_;
    // "private" may differ per client; an uncached or stale answer is the child's to give.
    if (json_read::string_or(result, "cacheScope", "") != "public") return nullptr;
    const json* ttl = json_read::member(result, "ttlMs");
    if (ttl == nullptr || !ttl->is_number() || !(ttl->get<double>() > 0)) return nullptr;
    const std::chrono::duration<double, std::milli> age = env_.now() - discover_received_;
    return age.count() < ttl->get<double>() ? &result : nullptr;
}

bool Router::child_has_tasks() const {
    const json* discovered = discover_cache_ ? &*discover_cache_ : &initialize_result_;
    const json* caps = json_read::object_at(*discovered, "capabilities");
    if (caps == nullptr) return false;
    // 2026-07-28: tasks are an extension; a server may still declare them the 2025-11-25 way.
    const json* extensions = json_read::object_at(*caps, "extensions");
    const json* tasks = extensions != nullptr
                            ? json_read::member(*extensions, "io.modelcontextprotocol/tasks")
                            : nullptr;
    if (tasks != nullptr && !tasks->is_null()) return true;
    return json_read::object_at(*caps, "tasks") != nullptr;
}

void Router::send_own_tasks(SessionId session, std::string_view line, const wire::Envelope& e,
                            const std::string& original_id) {
    // Only the task entries change: nextCursor and the rest pass byte for byte.
    wire::Replacements changes{{e.id, original_id}};
    std::deque<std::string> kept;
    for (const RawArray& tasks : raw_arrays_at(line, {"result", "tasks"})) {
        std::string& text = kept.emplace_back("[");
        for (const wire::Span element : tasks.elements) {
            const json task = parse_forwarded(element.in(line));
            const std::string* id = json_read::string_at(task, "taskId");
            const auto owner = id != nullptr ? task_owners_.find(*id) : task_owners_.end();
            if (owner == task_owners_.end() || owner->second != session) continue;
            if (text.size() > 1) text += ',';
            text += element.in(line);
        }
        text += ']';
        changes.push_back({tasks.span, text});
    }
    send_spliced(session, line, changes);
}

Router::Pending* Router::listen_stream(std::string_view raw_own_id, std::uint64_t& child_id) {
    const std::optional<std::uint64_t> id = jsonrpc::given_id(raw_own_id);
    if (!id) return nullptr;
    Pending* p = requests_.find(*id);
    if (p == nullptr || p->kind != PendingKind::listen) return nullptr;
    child_id = *id;
    return p;
}

void Router::end_listen_stream(std::string_view line, const wire::Envelope& e) {
    // The one server-sent cancel of the modern era. It names the stream by requestId, by
    // _meta's subscriptionId, or both: each is mapped back to the owner's own listen id.
    std::uint64_t child_id = 0;
    Pending* stream =
        e.request_id.empty() ? nullptr : listen_stream(e.request_id.in(line), child_id);
    if (stream == nullptr && !e.subscription_id.empty())
        stream = listen_stream(e.subscription_id.in(line), child_id);
    if (stream == nullptr) return;
    wire::Replacements changes;
    if (!e.request_id.empty()) changes.push_back({e.request_id, stream->original_id});
    if (!e.subscription_id.empty()) changes.push_back({e.subscription_id, stream->original_id});
    send_spliced(stream->session, line, changes);
    // The stream is over: whatever still comes for it (even a graceful close) is dropped.
    release(child_id, true);
}

void Router::handle_modern_notification(std::string_view line, const wire::Envelope& e) {
    if (e.method_is("notifications/cancelled")) {
        end_listen_stream(line, e);
        return;
    }
    if (!e.subscription_id.empty()) {
        // Everything on a listen stream names it by the listen request's id: ours, mapped
        // back to the session's own id token (its JSON type kept).
        std::uint64_t child_id = 0;
        Pending* stream = listen_stream(e.subscription_id.in(line), child_id);
        if (stream == nullptr) return;
        send_spliced(stream->session, line, {{e.subscription_id, stream->original_id}});
        return;
    }
    if (e.method_is("notifications/message")) {
        // Request-scoped, but nothing on stdio says which request: only when one session
        // is waiting can it be delivered for sure.
        if (const std::optional<SessionId> only = only_busy_session()) sessions_out_.send(*only, line);
        return;
    }
    env_.note_repeated("dropped a notification no session can be told apart for",
                       log::excerpt(e.method));
}

}  // namespace mcpd
