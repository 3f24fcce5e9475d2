#include "daemon/mux/group_router.h"

#include <algorithm>

#include "common/json_read.h"
#include "common/json_string.h"
#include "config/registry.h"
#include "daemon/mux/client_gate.h"
#include "daemon/mux/jsonrpc.h"

namespace mcpd {

using nlohmann::json;

json GroupRouter::parse(std::string_view line) {
    json parsed = json::parse(line, nullptr, false);
    if (parsed.is_discarded()) parsed = json::parse(wire::without_lone_surrogates(line), nullptr, false);
    return parsed;
}

GroupRouter::GroupRouter(GroupSpec spec, GroupEnvironment& env, std::uint64_t cursor_nonce)
    : spec_(std::move(spec)),
      server_names_([this] {
          std::vector<std::string> names;
          for (const GroupMemberSpec& member : spec_.members) names.push_back(member.server);
          return names;
      }()),
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

void GroupRouter::on_client_line(std::string_view line) { receive(Source::client, 0, line); }

void GroupRouter::on_member_line(std::size_t member, std::string_view line) {
    if (member >= members_.size()) return;
    receive(Source::member, member, line);
}

void GroupRouter::on_member_answer(std::size_t member, std::span<const std::string_view> pieces,
                                   const wire::Envelope& envelope, const wire::Replacements& changes) {
    if (member >= members_.size()) return;
    if (busy_) {
        // Its turn comes after the line in hand: it is read again then, as any queued line.
        inbox_.push_back(Inbound{Source::member, member, wire::joined(pieces)});
        return;
    }
    if (answer_in_place(member, pieces, envelope, changes)) return;
    wire::join(pieces, answer_);
    envelope_ = envelope;
    envelope_.after_splice(changes);
    run_now(Source::member_answer, member, answer_);
}

// A member's router may answer at once, from inside a call to it: what arrives meanwhile waits
// until the group has finished the line it is on, so that no handler runs inside another. A
// line that finds the group idle is handled where it lies, without a copy.
void GroupRouter::receive(Source source, std::size_t member, std::string_view line) {
    if (busy_) {
        inbox_.push_back(Inbound{source, member, std::string(line)});
        return;
    }
    run_now(source, member, line);
}

void GroupRouter::run_now(Source source, std::size_t member, std::string_view line) {
    while_busy([&] { dispatch(source, member, line); });
}

void GroupRouter::drain() {
    while (!inbox_.empty()) {
        Inbound next = std::move(inbox_.front());
        inbox_.pop_front();
        dispatch(next.source, next.member, next.line);
    }
}

void GroupRouter::dispatch(Source source, std::size_t member, std::string_view line) {
    try {
        switch (source) {
            case Source::client:
                handle_client_line(line);
                break;
            case Source::member:
                handle_member_line(member, line);
                break;
            case Source::member_answer:
                handle_member_line(member, line, true);
                break;
            case Source::down:
                handle_member_down(member, line);
                break;
            case Source::up:
                handle_member_up(member);
                break;
            case Source::closed:
                handle_member_closed(member, line);
                break;
        }
    } catch (const std::exception& error) {
        // One message's bug answers nothing wrong and breaks nothing else.
        env_.note(std::string("a group message could not be handled: ") + error.what());
    }
}

void GroupRouter::handle_client_line(std::string_view received) {
    // Handlers never nest (receive), so the copy and its envelope stay put while this one runs,
    // whatever the buffer `received` lies in does meanwhile.
    scratch_.assign(received);
    const wire::ScanStatus status = scanner_.scan(scratch_, envelope_);
    const std::string_view line = scratch_;  // after the scan, which may make room for padding
    // The same gate as a single server's session (client_gate).
    const GateVerdict verdict = check_client_message(status, envelope_, line, scanner_.error());
    if (verdict.kind == GateVerdict::Kind::drop_response) return;
    if (verdict.kind == GateVerdict::Kind::reply) {
        reply_error(verdict.raw_id, verdict.code, verdict.message);
        return;
    }
    const wire::Envelope& e = envelope_;
    if (e.is_response()) {
        client_response(e, line);
        return;
    }
    if (initializing_ && !e.method_is("ping")) {
        // Answered once the members have been; a client that will not wait is not queued
        // without end.
        if (before_initialize_.size() < kMaxEarlyLines && early_bytes_ < kMaxEarlyBytes) {
            early_bytes_ += line.size();
            before_initialize_.emplace_back(line);
            if (e.is_request()) ++early_requests_;
        } else if (e.is_request()) {
            reply_error(e.id.in(line), jsonrpc::kInvalidRequest,
                        "the session is still being initialized: wait for the initialize answer");
        }
        return;
    }
    if (e.is_notification()) {
        const json message = parse(line);
        if (message.is_object()) client_notification(message, e, line);
        return;
    }
    const std::string raw_id(e.id.in(line));
    const bool open_stream = std::any_of(streams_.begin(), streams_.end(),
                                         [&](const Stream& s) { return s.raw_id == raw_id; });
    if (waiting_.contains(raw_id) || open_stream) {
        reply_error(raw_id, jsonrpc::kInvalidRequest,
                    "duplicate request id: a request with this id is still in flight");
        return;
    }
    if (forward_call(e, line, raw_id)) return;
    const json message = parse(line);
    // The gate let through one object whose params are an object; should the tree parser still
    // read it otherwise, there is nothing to route by.
    if (!message.is_object()) {
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
    const std::string_view method = e.method;
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
    const auto id = given_id(e, line);
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

std::uint64_t GroupRouter::send_member(std::size_t member, json message, Sent sent) {
    const std::uint64_t id = next_id_++;
    message["id"] = id;
    without_tasks(message);
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
    wire::splice(line, {wire::Replacement{e.id, raw_id}}, reply_);
    env_.to_client(reply_);
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

}  // namespace mcpd
