// A group session's member side: what members send (answers, requests to the client,
// notifications), and members going away, coming back or leaving the session.
#include <algorithm>

#include "common/json_read.h"
#include "daemon/mux/group_router.h"
#include "daemon/mux/jsonrpc.h"

namespace mcpd {

using nlohmann::json;

void GroupRouter::handle_member_line(std::size_t member, std::string_view received, bool scanned) {
    // As for a client line: a copy, and its envelope, that stay put while the handler runs (an
    // answer handed over with its envelope lies in answer_, which only it writes).
    std::string_view line = received;
    if (!scanned) {
        scratch_.assign(received);
        if (scanner_.scan(scratch_, envelope_) != wire::ScanStatus::ok) return;  // routers send JSON
        line = scratch_;  // after the scan, which may make room for padding
    }
    const wire::Envelope& e = envelope_;
    if (e.is_response()) {
        member_response(member, e, line);
    } else if (e.is_request()) {
        member_request(member, e, line);
    } else if (e.is_notification()) {
        member_notification(member, e, line);
    }
}

bool GroupRouter::answer_in_place(std::size_t member, std::span<const std::string_view> pieces,
                                  const wire::Envelope& envelope,
                                  const wire::Replacements& changes) {
    // The 2026-07-28 era's results gain fields (answer_client): the general path.
    if (era_ == Era::modern || envelope.id_kind != wire::IdKind::integer) return false;
    // The pieces alternate: text of the child's line, then a replacement's, in text order. The
    // id's replacement is the one at its span; those before it give its place.
    const wire::Replacement* id = nullptr;
    std::size_t before = 0;
    for (const wire::Replacement& change : changes) {
        if (change.span == envelope.id) id = &change;
        else if (change.span.offset < envelope.id.offset) ++before;
    }
    const std::size_t at = 2 * before + 1;
    if (id == nullptr || pieces.size() != 2 * changes.size() + 1 ||
        pieces[at].data() != id->text.data())
        return false;
    const auto sent_id = jsonrpc::given_id(id->text);
    const auto found = sent_id ? sent_.find(*sent_id) : sent_.end();
    if (found == sent_.end() || found->second.member != member ||
        found->second.kind != Kind::forward)
        return false;
    const auto taken = sent_.extract(found);
    const std::string& raw_id = taken.mapped().raw_id;
    waiting_.erase(raw_id);
    swapped_.assign(pieces.begin(), pieces.end());
    swapped_[at] = raw_id;
    while_busy([this] { env_.to_client_pieces(swapped_); });
    return true;
}

void GroupRouter::member_response(std::size_t member, const wire::Envelope& e,
                                  std::string_view line) {
    const auto id = given_id(e, line);
    const auto found = id ? sent_.find(static_cast<std::uint64_t>(*id)) : sent_.end();
    if (found == sent_.end() || found->second.member != member) return;  // cancelled meanwhile
    // Taken out whole: its strings stay where they are.
    auto taken = sent_.extract(found);
    Sent& sent = taken.mapped();
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
    const std::string_view method = e.method;
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
        const std::string_view list = method.substr(14, method.size() - 14 - 13);  // "notifications/" … "/list_changed"
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

void GroupRouter::member_down(std::size_t member, std::string_view reason) {
    if (member >= members_.size()) return;
    receive(Source::down, member, reason);
}

void GroupRouter::member_up(std::size_t member) {
    if (member >= members_.size()) return;
    receive(Source::up, member, {});
}

void GroupRouter::member_closed(std::size_t member, std::string_view reason) {
    if (member >= members_.size()) return;
    receive(Source::closed, member, reason);
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
