// Router: the child's requests to sessions (sampling, elicitation, roots) — which session is
// asked, what is declined for it, and the session's answer, relayed or, when it cannot be,
// failed toward the child so that the child is never left waiting.
#include "common/json_read.h"
#include "common/log.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/lost_message_id.h"
#include "daemon/mux/router.h"

namespace mcpd {

using nlohmann::json;

std::optional<SessionId> Router::route_child_request(const wire::Envelope& e, std::string_view line) {
    if (!e.related_task_id.empty()) {
        // A task link decides alone: it is never second-guessed by who happens to be busy.
        const auto owner = task_owners_.find(task_id_of(e, line));
        if (owner == task_owners_.end()) return std::nullopt;
        return owner->second;
    }
    // Nothing on the wire says which session caused it: only when exactly one session has
    // requests at the child is the answer certain.
    std::optional<SessionId> only;
    for (const auto& [id, s] : sessions_) {
        if (s.in_flight.empty()) continue;
        if (only || s.departed) return std::nullopt;  // a departed one cannot be asked
        only = id;
    }
    return only;
}

void Router::handle_child_request(std::string_view line, const wire::Envelope& e) {
    const std::string_view method = e.method;
    if (modern_) {
        // Modern servers never send requests (they return input_required results instead).
        env_.child_send(jsonrpc::error(e.id.in(line), jsonrpc::kMethodNotFound,
                                       "a modern client does not take requests"));
        return;
    }
    if (method == "roots/list" && !config_.roots.empty()) {
        json roots = json::array();
        for (const std::string& root : config_.roots) {
            roots.push_back({{"uri", root.starts_with("file://") ? root : "file://" + root}});
        }
        env_.child_send(jsonrpc::result(e.id.in(line), json{{"roots", roots}}.dump()));
        return;
    }
    if (const std::string why = unusable_task_link(e, line); !why.empty()) {
        decline_child_request(line, e, why);
        return;
    }
    const std::optional<SessionId> target = route_child_request(e, line);
    SessionState* s = target ? find(*target) : nullptr;
    if (s == nullptr || !s->ready) {
        decline_child_request(line, e,
                              sessions_.empty() ? "no client session is attached"
                                                : "mcpd cannot tell which client session this request is for");
        return;
    }
    if (const std::string_view needed = newer_revision_needed(*s, e, line); !needed.empty()) {
        std::string message(method);
        message += " needs protocol revision ";
        message += needed;
        message += " or later, and the client session negotiated ";
        message += s->protocol;
        env_.child_send(jsonrpc::error(e.id.in(line), jsonrpc::kMethodNotFound, message));
        env_.note_repeated("declined a request from the server", log::excerpt(message, 160));
        return;
    }
    if (const std::string missing = missing_capability(*s, e, line); !missing.empty()) {
        // The spec's answers for a client that cannot take the request.
        const int code = method == "elicitation/create" ? jsonrpc::kInvalidParams : jsonrpc::kMethodNotFound;
        env_.child_send(jsonrpc::error(e.id.in(line), code,
                                       "the client session did not declare " + missing));
        std::string detail = log::excerpt(method);
        detail += ": the session did not declare ";
        detail += missing;
        env_.note_repeated("declined a request from the server", detail);
        return;
    }
    const std::string session_id = "\"mcpd-" + std::to_string(next_child_request_++) + "\"";
    child_requests_[session_id] =
        ChildRequest{s->id, std::string(e.id.in(line)), std::string(method),
                     std::string(e.progress_token.in(line)), env_.now() + kClientAnswerTimeout};
    env_.deadlines_changed();
    if (method == "elicitation/create" && !e.elicitation_id.empty()) {
        // Its notifications/elicitation/complete will come for this session alone.
        const json request = parse_forwarded(line);
        const json* params = json_read::object_at(request, "params");
        if (params != nullptr && json_read::string_or(*params, "mode", "") == "url")
            s->url_elicitations.insert(e.elicitation_id);
    }
    send_spliced(s->id, line, {{e.id, session_id}});
}

std::string Router::unusable_task_link(const wire::Envelope& e, std::string_view line) const {
    if (e.related_task_id.empty()) return {};
    const std::string task = task_id_of(e, line);
    const auto owner = task.empty() ? task_owners_.end() : task_owners_.find(task);
    if (owner == task_owners_.end())
        return "the task it is tied to is unknown, or the client session owning it has gone";
    const auto s = sessions_.find(owner->second);
    if (s == sessions_.end()) return "the client session owning the task it is tied to has gone";
    if (s->second.ended_tasks.contains(task)) return "the task it is tied to has already ended";
    return {};
}

std::string Router::missing_capability(const SessionState& s, const wire::Envelope& e,
                                       std::string_view line) const {
    const std::string_view method = e.method;
    const char* name = method == "roots/list"               ? "roots"
                       : method == "sampling/createMessage" ? "sampling"
                       : method == "elicitation/create"     ? "elicitation"
                                                            : nullptr;
    if (name == nullptr) return "";
    // A capability (or sub-capability) is declared by an object; null or true is not one.
    const json* declared = json_read::object_at(s.capabilities, name);
    if (declared == nullptr) return name;
    if (method == "roots/list") return "";
    // Server→client requests are rare: reading their params in full costs nothing that matters.
    const json request = parse_forwarded(line);
    static const json kNoParams = json::object();
    const json* found = json_read::object_at(request, "params");
    const json& params = found != nullptr ? *found : kNoParams;
    if (method == "sampling/createMessage") {
        if (params.contains("tools") && json_read::object_at(*declared, "tools") == nullptr)
            return "sampling.tools";
        // Anything but an absent or "none" includeContext asks for the session's context.
        const json* context = json_read::member(params, "includeContext");
        const bool wants_context = context != nullptr && !context->is_null() && *context != "none";
        if (wants_context && json_read::object_at(*declared, "context") == nullptr)
            return "sampling.context";
        return "";
    }
    // An absent (or null) mode is a form; a mode that is not a string is neither kind.
    const json* mode_value = json_read::member(params, "mode");
    const std::string mode = mode_value == nullptr || mode_value->is_null() ? "form"
                             : mode_value->is_string() ? mode_value->get<std::string>()
                                                       : "?";
    if (mode == "url" && json_read::object_at(*declared, "url") == nullptr)
        return "elicitation.url";
    // An empty elicitation object means form only.
    if (mode == "form" && !declared->empty() && json_read::object_at(*declared, "form") == nullptr)
        return "elicitation.form";
    if (mode != "form" && mode != "url") return "elicitation (mode is not \"form\" or \"url\")";
    return "";
}

void Router::decline_child_request(std::string_view line, const wire::Envelope& e,
                                   const std::string& why) {
    const std::string_view raw_id = e.id.in(line);
    if (e.method_is("elicitation/create")) {
        env_.child_send(jsonrpc::result(raw_id, R"({"action":"cancel"})"));
    } else if (e.method_is("sampling/createMessage")) {
        env_.child_send(jsonrpc::error(raw_id, -1, "sampling declined by mcpd: " + why));
    } else {
        env_.child_send(jsonrpc::error(raw_id, jsonrpc::kMethodNotFound, e.method + " is not available: " + why));
    }
    std::string detail = log::excerpt(e.method);
    detail += ": ";
    detail += why;
    env_.note_repeated("declined a request from the server", detail);
}

void Router::check_session_answer(SessionId session, std::string_view line,
                                  wire::ScanStatus status, const wire::Envelope& e) {
    if (child_requests_.empty()) return;
    if (status == wire::ScanStatus::not_json) {
        // Its edges may still show which request it answers.
        const LostMessageId edges = read_lost_message_id(line, line);
        // A request cut short is not an answer, nor is a line of mere whitespace.
        if (edges.request || line.find_first_not_of(" \t\r\n") == std::string_view::npos) return;
        std::string why = "not valid JSON (";
        why += scanner_.error();
        why += ')';
        if (!edges.id.empty()) {
            if (edges.response) fail_child_request(session, edges.id, why);
        } else {
            fail_only_child_request(session, why);
        }
        return;
    }
    const bool id_usable = e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer;
    if (status != wire::ScanStatus::ok || e.has_method) return;
    if (!id_usable) {
        // A response with no id, or id null (the client's own parse error): it can only be
        // for a request of the child's waiting on this session.
        if (e.has_result || e.has_error)
            fail_only_child_request(session,
                                    "it answers no id (its id is missing, null or not "
                                    "a string or an integer)");
        return;
    }
    const char* why = nullptr;
    if (!e.jsonrpc_ok || e.malformed) {
        why = "not a valid JSON-RPC response";
    } else if (e.has_result == e.has_error) {
        why = e.has_result ? "it holds both a result and an error"
                           : "it holds neither a result nor an error";
    } else if (e.has_result && !e.result_object) {
        why = "its result is not an object";
    } else if (e.has_error && !e.error_valid) {
        why = "its error is not an object with an integer code and a string message";
    }
    if (why != nullptr) fail_child_request(session, e.id.in(line), why);
}

bool Router::fail_child_request(SessionId session, std::string_view raw_id, std::string_view why) {
    const auto it = child_requests_.find(std::string(raw_id));
    if (it == child_requests_.end() || it->second.session != session) return false;
    std::string message = "the client's reply to ";
    message += it->second.method;
    message += " was unusable: ";
    message += why;
    env_.child_send(jsonrpc::error(it->second.child_id, jsonrpc::kInternalError, message,
                                   "client reply unusable"));
    std::string detail = "session ";
    detail += std::to_string(session);
    detail += ", ";
    detail += log::excerpt(it->second.method);
    detail += ": ";
    detail += why;
    env_.note_repeated(
        "answered a request from the server with an error: the client's reply was unusable",
        detail);
    child_requests_.erase(it);
    return true;
}

void Router::fail_only_child_request(SessionId session, std::string_view why) {
    const ChildRequestMap::iterator none = child_requests_.end();
    ChildRequestMap::iterator only = none;
    std::size_t waiting = 0;
    for (auto cr = child_requests_.begin(); cr != none; ++cr) {
        if (cr->second.session != session) continue;
        ++waiting;
        only = cr;
    }
    if (waiting == 1) {
        fail_child_request(session, std::string(only->first), why);
        return;
    }
    if (waiting == 0) return;
    std::string detail = "session ";
    detail += std::to_string(session);
    detail += " has ";
    detail += std::to_string(waiting);
    detail += " requests of the server to answer and its reply names none of them (";
    detail += why;
    detail += "); each fails toward the server if not answered within ";
    detail += format_duration(kClientAnswerTimeout);
    env_.note_repeated("a client session's reply could not be matched to a request of the server",
                       detail);
}

std::optional<TimePoint> Router::next_client_answer_deadline() const {
    std::optional<TimePoint> next;
    for (const auto& [id, request] : child_requests_) {
        if (!next || request.deadline < *next) next = request.deadline;
    }
    return next;
}

void Router::expire_child_requests(TimePoint now) {
    for (auto cr = child_requests_.begin(); cr != child_requests_.end();) {
        if (cr->second.deadline > now) {
            ++cr;
            continue;
        }
        const ChildRequest& request = cr->second;
        std::string message = "the client session did not answer ";
        message += request.method;
        message += " within ";
        message += format_duration(kClientAnswerTimeout);
        message += "; mcpd stopped waiting for it";
        env_.child_send(jsonrpc::error(request.child_id, jsonrpc::kInternalError, message,
                                       "client did not answer"));
        // A client may be showing a prompt or a form for it: it is over.
        sessions_out_.send(request.session,
                           jsonrpc::cancelled(cr->first, "the server's request timed out in mcpd"));
        std::string detail = "session ";
        detail += std::to_string(request.session);
        detail += ", ";
        detail += log::excerpt(request.method);
        env_.note_repeated(
            "a request from the server was not answered by its client session in time", detail);
        cr = child_requests_.erase(cr);
    }
}

bool Router::on_session_reply_lost(SessionId session, std::string_view raw_id,
                                   std::string_view why) {
    return fail_child_request(session, raw_id, why);
}

void Router::handle_session_response(SessionState& s, std::string_view line,
                                     const wire::Envelope& e) {
    const auto it = child_requests_.find(std::string(e.id.in(line)));
    if (it == child_requests_.end() || it->second.session != s.id) return;  // not asked, or late
    if (!e.created_task_id.empty()) {
        // mcpd never offered the child client-side tasks, so a task is not an answer.
        env_.child_send(jsonrpc::error(it->second.child_id, jsonrpc::kInternalError,
                                       "the client answered with a task, which mcpd does not relay"));
        child_requests_.erase(it);
        return;
    }
    if (it->second.method == std::string_view("roots/list")) compare_roots(s, line);
    const std::string child_id = std::move(it->second.child_id);
    child_requests_.erase(it);
    send_spliced_to_child(line, {{e.id, child_id}});
}

}  // namespace mcpd
