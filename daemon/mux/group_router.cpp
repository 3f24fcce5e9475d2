#include "daemon/mux/group_router.h"

#include <algorithm>

#include "common/json_read.h"
#include "common/json_string.h"
#include "common/scope_guard.h"
#include "config/registry.h"
#include "daemon/mux/jsonrpc.h"

namespace mcpd {

using nlohmann::json;

namespace {

// A line read with nlohmann, lone surrogates read as U+FFFD (the scanner lets them through, as
// servers send them); discarded when it is not JSON.
json parse(std::string_view line) {
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_discarded()) parsed = json::parse(wire::without_lone_surrogates(line), nullptr, false);
    return parsed;
}

}  // namespace

GroupRouter::GroupRouter(GroupSpec spec, GroupEnvironment& env, std::uint64_t cursor_nonce)
    : spec_(std::move(spec)),
      env_(env),
      nonce_(std::to_string(cursor_nonce)),
      members_(spec_.members.size()),
      scanner_(config::DaemonConfig{}.max_message_bytes) {}

void GroupRouter::exclude(std::size_t member, std::string why) {
    if (member >= members_.size() || initialized_ || initializing_) return;
    members_[member].state = MemberState::left_out;
    members_[member].why = std::move(why);
}

std::map<std::string, std::string> GroupRouter::left_out() const {
    std::map<std::string, std::string> out;
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (members_[i].state == MemberState::left_out) out[spec_.members[i].server] = members_[i].why;
    }
    return out;
}

std::vector<std::string> GroupRouter::server_names() const {
    std::vector<std::string> names;
    for (const GroupMemberSpec& member : spec_.members) names.push_back(member.server);
    return names;
}

// A member's router may answer at once, from inside a call to it: what arrives meanwhile waits
// until the group has finished the line it is on, so that no handler runs inside another.
void GroupRouter::on_client_line(std::string_view line) {
    inbox_.push_back(Inbound{Source::client, 0, std::string(line)});
    drain();
}

void GroupRouter::on_member_line(std::size_t member, std::string_view line) {
    if (member >= members_.size()) return;
    inbox_.push_back(Inbound{Source::member, member, std::string(line)});
    drain();
}

void GroupRouter::drain() {
    if (busy_) return;
    busy_ = true;
    const OnScopeEnd done([this] { busy_ = false; });
    while (!inbox_.empty()) {
        Inbound next = std::move(inbox_.front());
        inbox_.pop_front();
        try {
            switch (next.source) {
                case Source::client:
                    handle_client_line(next.line);
                    break;
                case Source::member:
                    handle_member_line(next.member, next.line);
                    break;
                case Source::down:
                    handle_member_down(next.member, next.line);
                    break;
                case Source::up:
                    handle_member_up(next.member);
                    break;
                case Source::closed:
                    handle_member_closed(next.member, next.line);
                    break;
            }
        } catch (const std::exception& error) {
            // One message's bug answers nothing wrong and breaks nothing else.
            env_.note(std::string("a group message could not be handled: ") + error.what());
        }
    }
}

void GroupRouter::handle_client_line(std::string_view line) {
    scratch_.assign(line);
    const wire::ScanStatus status = scanner_.scan(scratch_, envelope_);
    if (status == wire::ScanStatus::not_json) {
        env_.to_client(jsonrpc::error({}, jsonrpc::kParseError, "parse error: " + scanner_.error()));
        return;
    }
    if (status == wire::ScanStatus::not_object) {
        env_.to_client(jsonrpc::error({}, jsonrpc::kInvalidRequest,
                                      "invalid request: the line is " + scanner_.error() +
                                          ", not one JSON-RPC object; send one message per line"));
        return;
    }
    const wire::Envelope e = envelope_;
    const std::string_view id = e.id.in(line);
    const bool id_usable = e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer;
    // As a server's router does: a bad response is dropped, never answered (two peers answering
    // each other's bad responses would loop), and a bad request is answered by its id when it
    // has exactly one usable id.
    if (e.is_response() && (!e.jsonrpc_ok || e.malformed || !id_usable)) return;
    if (!e.jsonrpc_ok) {
        reply_error(id_usable ? id : std::string_view(), jsonrpc::kInvalidRequest,
                    "invalid request: \"jsonrpc\" must be \"2.0\"");
        return;
    }
    if (e.malformed) {
        reply_error(id_usable && !e.repeated_id ? id : std::string_view(), jsonrpc::kInvalidRequest,
                    "invalid request: a repeated id, a method that is not a string, or params that "
                    "are not an object");
        return;
    }
    if (e.id_kind == wire::IdKind::null || e.id_kind == wire::IdKind::invalid) {
        reply_error({}, jsonrpc::kInvalidRequest, "invalid request: an id must be a string or an integer");
        return;
    }
    if (!e.has_method && !e.is_response()) {
        reply_error(id_usable ? id : std::string_view(), jsonrpc::kInvalidRequest,
                    "invalid request: neither a request, a notification nor a response");
        return;
    }
    if (e.is_response()) {
        client_response(e, line);
        return;
    }
    if (initializing_ && e.method != "ping") {
        // Answered once the members have been; a client that will not wait is not queued
        // without end.
        if (before_initialize_.size() < kMaxEarlyLines) {
            before_initialize_.emplace_back(line);
            if (e.is_request()) ++early_requests_;
        } else if (e.is_request()) {
            reply_error(e.id.in(line), jsonrpc::kInvalidRequest,
                        "the session is still being initialized: wait for the initialize answer");
        }
        return;
    }
    const json message = parse(line);
    if (e.is_notification()) {
        if (message.is_object()) client_notification(message, e, line);
        return;
    }
    const std::string raw_id(id);
    const bool open_stream = std::any_of(streams_.begin(), streams_.end(),
                                         [&](const Stream& s) { return s.raw_id == raw_id; });
    if (waiting_.contains(raw_id) || open_stream) {
        reply_error(raw_id, jsonrpc::kInvalidRequest,
                    "duplicate request id: a request with this id is still in flight");
        return;
    }
    if (!message.is_object() || (message.contains("params") && !message["params"].is_object())) {
        reply_error(raw_id, jsonrpc::kInvalidParams, "invalid params: expected an object");
        return;
    }
    try {
        client_request(message, raw_id, line);
    } catch (const std::exception& error) {
        // Whatever went wrong, the request is answered.
        waiting_.erase(raw_id);
        reply_error(raw_id, jsonrpc::kInternalError,
                    std::string("the group could not handle this request: ") + error.what());
    }
}

void GroupRouter::client_request(const json& message, std::string_view raw_id,
                                 std::string_view line) {
    const std::string method = json_read::string_or(message, "method", "");
    if (method == "ping") {
        reply(raw_id, json::object());
        return;
    }
    if (method == "initialize") {
        if (initialized_ || era_ == Era::modern) {
            reply_error(raw_id, jsonrpc::kInvalidRequest, "this session is already initialized");
            return;
        }
        start_initialize(message, raw_id);
        return;
    }
    if (!initialized_) {
        if (modern_request(message)) {
            start_modern(message, raw_id, line);  // a 2026-07-28 client: no handshake
            return;
        }
        reply_error(raw_id, jsonrpc::kInvalidRequest,
                    "send initialize first (or, in 2026-07-28, _meta with a protocolVersion): this "
                    "session has not been initialized");
        return;
    }
    if (era_ == Era::modern) {
        if (method == "server/discover") {
            reply(raw_id, discover_result(), true);
            return;
        }
        if (method == "subscriptions/listen") {
            start_listen(message, raw_id);
            return;
        }
    }
    if (const ListKind* kind = list_kind(method)) {
        start_list(*kind, message, raw_id);
        return;
    }
    if (method == "tools/call") return call_by_name(message, raw_id, "tool");
    if (method == "prompts/get") return call_by_name(message, raw_id, "prompt");
    if (method == "resources/read" || method == "resources/subscribe" ||
        method == "resources/unsubscribe")
        return by_uri(message, raw_id);
    if (method == "completion/complete") return complete(message, raw_id);
    if (method == "logging/setLevel") return start_set_level(message, raw_id);
    if (!spec_.prefix && active(0)) {
        // A server served alone keeps every method it has (tasks, extensions).
        send_member(0, message, Sent{Kind::forward, 0, std::string(raw_id)});
        return;
    }
    reply_error(raw_id, jsonrpc::kMethodNotFound,
                "method not found: a group session does not offer " + method);
}

void GroupRouter::client_notification(const json& message, const wire::Envelope& e,
                                      std::string_view line) {
    const std::string& method = e.method;
    if (method == "notifications/cancelled") {
        const std::string target(e.request_id.in(line));
        if (std::any_of(streams_.begin(), streams_.end(), [&](const Stream& s) { return s.raw_id == target; })) {
            end_listen(target);  // the client closes a listen stream
            return;
        }
        const auto found = waiting_.find(target);
        if (found == waiting_.end()) return;  // answered already, or never sent
        const std::uint64_t member_id = found->second;
        const auto sent = sent_.find(member_id);
        // A request sent to every member (initialize, setLevel) is answered all the same.
        if (sent == sent_.end()) return;
        waiting_.erase(found);
        const std::size_t member = sent->second.member;
        sent_.erase(sent);
        json cancel = message;
        cancel["params"]["requestId"] = member_id;
        env_.to_member(member, cancel.dump(-1, ' ', false, json::error_handler_t::replace));
        return;
    }
    if (method == "notifications/progress") {
        // Progress on a member's request to the client: to the member whose token it is.
        const std::string token(e.reported_token.in(line));
        for (const auto& [id, request] : server_requests_) {
            if (!token.empty() && request.progress_token == token) {
                env_.to_member(request.member, line);
                return;
            }
        }
        return;
    }
    if (method == "notifications/initialized" && !initialized_) return;
    // initialized, roots/list_changed and anything else: every member hears it.
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (members_[i].state == MemberState::active || members_[i].state == MemberState::down)
            env_.to_member(i, line);
    }
}

void GroupRouter::client_response(const wire::Envelope& e, std::string_view line) {
    const auto id = json_read::as_integer(parse(e.id.in(line)));
    const auto found = id ? server_requests_.find(static_cast<std::uint64_t>(*id))
                          : server_requests_.end();
    if (found == server_requests_.end()) {
        env_.note("a group client answered a request it was not sent; dropped");
        return;
    }
    const ServerRequest request = found->second;
    server_requests_.erase(found);
    std::string out;
    wire::splice(line, {wire::Replacement{e.id, request.raw_id}}, out);
    env_.to_member(request.member, out);
}

void GroupRouter::handle_member_line(std::size_t member, std::string_view line) {
    scratch_.assign(line);
    if (scanner_.scan(scratch_, envelope_) != wire::ScanStatus::ok) return;  // routers send JSON
    const wire::Envelope e = envelope_;
    if (e.is_response()) {
        member_response(member, e, line);
    } else if (e.is_request()) {
        member_request(member, e, line);
    } else if (e.is_notification()) {
        member_notification(member, e, line);
    }
}

void GroupRouter::member_response(std::size_t member, const wire::Envelope& e,
                                  std::string_view line) {
    const auto id = json_read::as_integer(parse(e.id.in(line)));
    const auto found = id ? sent_.find(static_cast<std::uint64_t>(*id)) : sent_.end();
    if (found == sent_.end() || found->second.member != member) return;  // cancelled meanwhile
    Sent sent = std::move(found->second);
    sent_.erase(found);
    switch (sent.kind) {
        case Kind::forward: {
            waiting_.erase(sent.raw_id);
            answer_client(e, line, sent.raw_id, sent.list == "resources/read");
            return;
        }
        case Kind::list:
            waiting_.erase(sent.raw_id);
            finish_list(sent, parse(line));
            return;
        case Kind::read_probe: {
            // Not this member's: the next one that has resources may own the URI.
            const json probe = parse(sent.line);
            const json* params = json_read::object_at(probe, "params");
            const std::string uri = params != nullptr ? json_read::string_or(*params, "uri", "") : "";
            const auto next = next_reader(uri, member + 1);
            if (e.has_error && next) {
                send_member(*next, probe, Sent{Kind::read_probe, *next, sent.raw_id, {}, {}, sent.line});
                return;
            }
            waiting_.erase(sent.raw_id);
            if (!e.has_error && !uri.empty()) remember_owner(uri, member);
            answer_client(e, line, sent.raw_id, true);
            return;
        }
        case Kind::discover:
            modern_member_settled(member, sent.fanout, parse(line), false);
            return;
        case Kind::listen:
            // The member ended its stream (or refused it): reopened when it is back.
            for (Stream& stream : streams_) std::erase_if(stream.member_listens, [&](const auto& entry) {
                return entry.first == member && entry.second == static_cast<std::uint64_t>(*id);
            });
            return;
        case Kind::internal:
            return;
        case Kind::initialize:
            if (sent.fanout.starts_with("modern-")) {
                modern_member_settled(member, sent.fanout, parse(line), true);
                return;
            }
            [[fallthrough]];
        case Kind::set_level: {
            const auto fanout = fanouts_.find(sent.fanout);
            if (fanout == fanouts_.end()) return;
            const json reply = parse(line);
            if (const json* result = json_read::object_at(reply, "result")) {
                fanout->second.results[member] = *result;
            } else {
                const json* error = json_read::object_at(reply, "error");
                fanout->second.results[member] = json{{"error", error ? *error : json::object()}};
            }
            if (--fanout->second.remaining == 0) finish_fanout(sent.fanout);
            return;
        }
    }
}

void GroupRouter::member_request(std::size_t member, const wire::Envelope& e,
                                 std::string_view line) {
    if (era_ == Era::modern) {
        // A legacy member asks its session (the group): a 2026-07-28 client takes no requests.
        env_.to_member(member, jsonrpc::error(e.id.in(line), jsonrpc::kMethodNotFound,
                                              "the group's client speaks 2026-07-28, which has no "
                                              "requests from server to client"));
        return;
    }
    // sampling, elicitation, roots: to the client with an id of the group's, the answer back
    // to this member alone.
    const std::uint64_t id = next_server_request_++;
    server_requests_[id] =
        ServerRequest{member, std::string(e.id.in(line)), std::string(e.progress_token.in(line))};
    std::string out;
    const std::string text = std::to_string(id);
    wire::splice(line, {wire::Replacement{e.id, text}}, out);
    env_.to_client(out);
}

void GroupRouter::member_notification(std::size_t member, const wire::Envelope& e,
                                      std::string_view line) {
    const std::string& method = e.method;
    if (era_ == Era::modern && method == "notifications/cancelled") {
        // A modern member ended a listen stream (its server went away): reopened when back.
        const auto id = json_read::as_integer(parse(e.request_id.in(line)));
        for (Stream& stream : streams_) std::erase_if(stream.member_listens, [&](const auto& entry) {
            return id && entry.first == member && entry.second == static_cast<std::uint64_t>(*id);
        });
        if (id) sent_.erase(static_cast<std::uint64_t>(*id));
        return;
    }
    if (method == "notifications/cancelled") {
        // The member gave up a request it sent the client: name it by the client's id.
        const std::string target(e.request_id.in(line));
        for (auto it = server_requests_.begin(); it != server_requests_.end(); ++it) {
            if (it->second.member != member || it->second.raw_id != target) continue;
            const std::string text = std::to_string(it->first);
            server_requests_.erase(it);
            std::string out;
            wire::splice(line, {wire::Replacement{e.request_id, text}}, out);
            env_.to_client(out);
            return;
        }
        return;
    }
    if (method.ends_with("/list_changed")) {
        const std::string list = method.substr(14, method.size() - 14 - 13);  // "notifications/" … "/list_changed"
        if (list == "tools") ++epochs_["tools/list"];
        if (list == "prompts") ++epochs_["prompts/list"];
        if (list == "resources") {
            ++epochs_["resources/list"];
            ++epochs_["resources/templates/list"];
            std::erase_if(uri_owners_, [member](const auto& entry) { return entry.second == member; });
            members_[member].templates.clear();
        }
        if (!active(member)) return;  // its items are not in the group now
    }
    if (era_ == Era::modern) {
        // Progress and request-scoped logs answer a request; everything else travels only on
        // the client's listen streams.
        if (method == "notifications/progress" || (method == "notifications/message" && members_[member].modern)) {
            env_.to_client(line);
        } else if (active(member)) {
            to_streams(member, e, line);
        }
        return;
    }
    env_.to_client(line);
}

std::uint64_t GroupRouter::send_member(std::size_t member, json message, Sent sent) {
    const std::uint64_t id = next_id_++;
    message["id"] = id;
    sent.member = member;
    // A request of the client's that one member answers; fan-outs, listens and the group's own
    // requests are accounted for elsewhere.
    if (sent.kind == Kind::forward || sent.kind == Kind::list || sent.kind == Kind::read_probe)
        waiting_[sent.raw_id] = id;
    sent_[id] = std::move(sent);
    env_.to_member(member, message.dump(-1, ' ', false, json::error_handler_t::replace));
    return id;
}

void GroupRouter::reply(std::string_view raw_id, const json& result, bool cacheable) {
    if (era_ == Era::modern && result.is_object()) {
        // Every 2026-07-28 result says whether it is complete, and one a client may cache for
        // how long and for whom: the group's are its session's own, and not to be kept.
        json modern = result;
        if (!modern.contains("resultType")) modern["resultType"] = "complete";
        if (cacheable && !modern.contains("ttlMs")) modern["ttlMs"] = 0;
        if (cacheable && !modern.contains("cacheScope")) modern["cacheScope"] = "private";
        env_.to_client(jsonrpc::result(raw_id, modern.dump(-1, ' ', false, json::error_handler_t::replace)));
        return;
    }
    env_.to_client(jsonrpc::result(raw_id, result.dump(-1, ' ', false, json::error_handler_t::replace)));
}

void GroupRouter::answer_client(const wire::Envelope& e, std::string_view line, std::string_view raw_id,
                                bool cacheable) {
    if (era_ == Era::modern && e.has_result && e.result_type.empty()) {
        // A legacy member's result to a 2026-07-28 client: it gains what that era requires.
        const json answer = parse(line);
        if (const json* result = json_read::object_at(answer, "result")) {
            reply(raw_id, *result, cacheable);
            return;
        }
    }
    std::string out;
    wire::splice(line, {wire::Replacement{e.id, raw_id}}, out);
    env_.to_client(out);
}

void GroupRouter::reply_error(std::string_view raw_id, int code, std::string_view message,
                              const json* data) {
    json error = {{"code", code}, {"message", message}};
    if (data != nullptr) error["data"] = *data;
    std::string out = R"({"jsonrpc":"2.0","id":)";
    out += raw_id.empty() ? std::string_view("null") : raw_id;
    out += R"(,"error":)";
    out += error.dump(-1, ' ', false, json::error_handler_t::replace);
    out += '}';
    env_.to_client(out);
}

void GroupRouter::member_down(std::size_t member, std::string_view reason) {
    if (member >= members_.size()) return;
    inbox_.push_back(Inbound{Source::down, member, std::string(reason)});
    drain();
}

void GroupRouter::member_up(std::size_t member) {
    if (member >= members_.size()) return;
    inbox_.push_back(Inbound{Source::up, member, {}});
    drain();
}

void GroupRouter::member_closed(std::size_t member, std::string_view reason) {
    if (member >= members_.size()) return;
    inbox_.push_back(Inbound{Source::closed, member, std::string(reason)});
    drain();
}

void GroupRouter::handle_member_down(std::size_t member, std::string_view reason) {
    if (members_[member].state != MemberState::active) return;
    members_[member].state = MemberState::down;
    for (Stream& stream : streams_) {
        // Its listens ended with its server; they are opened again when it is back.
        if (const auto own = stream.member_listens.find(member); own != stream.member_listens.end()) {
            sent_.erase(own->second);
            stream.member_listens.erase(own);
        }
    }
    env_.note("group '" + spec_.name + "': member '" + spec_.members[member].server +
              "' is away (" + std::string(reason) + "); its items leave the group");
    members_changed(member);
}

void GroupRouter::handle_member_up(std::size_t member) {
    if (members_[member].state != MemberState::down) return;
    members_[member].state = MemberState::active;
    members_changed(member);
    // A modern member's listens ended with its server; a legacy member's router restored its
    // subscriptions itself.
    if (members_[member].modern) {
        for (std::size_t i = 0; i < streams_.size(); ++i) open_member_listens(i, member);
    }
}

void GroupRouter::handle_member_closed(std::size_t member, std::string_view reason) {
    const bool was_in = members_[member].state == MemberState::active;
    members_[member].state = MemberState::left_out;
    members_[member].why = std::string(reason);
    // Its requests will not be answered now: the client hears so, and what waited on every
    // member's answer takes this as the member's error. Collected first: settling may send.
    std::vector<Sent> lost;
    for (auto it = sent_.begin(); it != sent_.end();) {
        if (it->second.member != member) {
            ++it;
            continue;
        }
        lost.push_back(std::move(it->second));
        it = sent_.erase(it);
    }
    const std::string why = "server '" + spec_.members[member].server +
                            "' left the group session: " + std::string(reason);
    for (Sent& sent : lost) {
        switch (sent.kind) {
            case Kind::forward:
            case Kind::list:
            case Kind::read_probe:
                waiting_.erase(sent.raw_id);
                reply_error(sent.raw_id, jsonrpc::kInternalError, why);
                break;
            case Kind::discover:
            case Kind::initialize:
            case Kind::set_level: {
                const json error = {{"error", {{"code", jsonrpc::kInternalError}, {"message", why}}}};
                if (sent.fanout.starts_with("modern-")) {
                    modern_member_settled(member, sent.fanout, error, true);
                } else if (const auto fanout = fanouts_.find(sent.fanout); fanout != fanouts_.end()) {
                    fanout->second.results[member] = error;
                    if (--fanout->second.remaining == 0) finish_fanout(sent.fanout);
                }
                break;
            }
            case Kind::listen:
            case Kind::internal:
                break;
        }
    }
    for (Stream& stream : streams_) stream.member_listens.erase(member);
    if (was_in) members_changed(member);
}

// A member's items came or went: the lists it had change, and cursors into them are old.
void GroupRouter::members_changed(std::size_t member) {
    for (auto& [method, epoch] : epochs_) ++epoch;
    const json merged = merged_capabilities();
    for (const char* list : {"tools", "prompts", "resources"}) {
        const json* feature = json_read::object_at(members_[member].capabilities, list);
        if (feature == nullptr) continue;
        // Sent where the client was told lists may change (the group declares listChanged
        // where a member does).
        const json* declared = json_read::object_at(merged, list);
        if (declared != nullptr && json_read::bool_at(*declared, "listChanged").value_or(false))
            list_changed(list);
    }
}

void GroupRouter::list_changed(std::string_view list) {
    if (!initialized_) return;
    if (era_ != Era::modern) {
        env_.to_client(jsonrpc::list_changed(list));
        return;
    }
    const std::string method = "notifications/" + std::string(list) + "/list_changed";
    for (const Stream& stream : streams_) {
        const bool wanted = (list == "tools" && stream.tools) || (list == "prompts" && stream.prompts) ||
                            (list == "resources" && stream.resources);
        if (wanted) env_.to_client(stream_notification(method, json::object(), stream.raw_id));
    }
}

}  // namespace mcpd
