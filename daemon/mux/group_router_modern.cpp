// A group session whose client speaks the stateless era (2026-07-28): no handshake, the client's
// _meta on every request, and change notifications only on its subscriptions/listen streams.
//
// On the client's first request the group asks every member for its server/discover; a member
// whose server speaks only the initialize handshake answers that it does not know the method,
// and the group initializes that member session itself (as the legacy client it then is), so
// legacy and modern members serve one modern client. Requests go to members as they came,
// _meta included. A listen stream of the client's becomes a listen of each modern member (its
// notifications re-tagged with the client's stream id) and, for a legacy member, subscriptions
// to the URIs it owns and its unsolicited list_changed, carried on the streams that asked.
#include <algorithm>

#include "common/json_read.h"
#include "daemon/mux/group_router.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/mcp_versions.h"
#include "daemon/mux/peer_names.h"

namespace mcpd {

using nlohmann::json;

namespace {

// What the group initializes a legacy member's session with for a modern client.
constexpr std::string_view kLegacyVersion = "2025-11-25";
constexpr const char* kSubscriptionKey = "io.modelcontextprotocol/subscriptionId";

std::string dumped(const json& value) {
    return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

bool GroupRouter::modern_request(const json& message) {
    if (json_read::string_or(message, "method", "") == "server/discover") return true;
    const json* params = json_read::object_at(message, "params");
    const json* meta = params != nullptr ? json_read::object_at(*params, "_meta") : nullptr;
    return meta != nullptr && json_read::string_at(*meta, kMetaProtocolVersion) != nullptr;
}

void GroupRouter::start_modern(const json& message, std::string_view raw_id, std::string_view line) {
    initializing_ = true;
    era_ = Era::modern;
    const json* params = json_read::object_at(message, "params");
    const json* meta = params != nullptr ? json_read::object_at(*params, "_meta") : nullptr;
    modern_meta_ = json::object();
    if (meta != nullptr) {
        // What a member needs to serve the client: its version, capabilities and name.
        for (const char* key : {kMetaProtocolVersion, kMetaClientCapabilities, kMetaClientInfo}) {
            if (const json* value = json_read::member(*meta, key)) modern_meta_[key] = *value;
        }
    }
    if (json_read::string_at(modern_meta_, kMetaProtocolVersion) == nullptr)
        modern_meta_[kMetaProtocolVersion] = kModernProtocolVersion;
    if (json_read::object_at(modern_meta_, kMetaClientCapabilities) == nullptr)
        modern_meta_[kMetaClientCapabilities] = json::object();
    if (const json* info = json_read::object_at(modern_meta_, kMetaClientInfo))
        client_name_ = cut_to(json_read::string_or(*info, "name", ""), kMaxClientTextBytes);
    modern_trigger_ = std::string(line);
    // The first request itself is handled again once the members are settled.
    fan_out("modern-", raw_id, Kind::discover,
            {{"jsonrpc", "2.0"}, {"method", "server/discover"}, {"params", {{"_meta", modern_meta_}}}});
}

void GroupRouter::modern_member_settled(std::size_t member, const std::string& key,
                                        const json& reply, bool initialize) {
    const auto fanout = fanouts_.find(key);
    if (fanout == fanouts_.end()) return;
    const json* result = json_read::object_at(reply, "result");
    if (result == nullptr && !initialize) {
        // No server/discover: a server of the initialize handshake. The group is its client.
        json info = {{"name", client_name_.empty() ? "mcpd group " + spec_.name : client_name_}, {"version", "1"}};
        if (const json* own = json_read::object_at(modern_meta_, kMetaClientInfo)) info = *own;
        json request = {{"jsonrpc", "2.0"},
                        {"method", "initialize"},
                        {"params", {{"protocolVersion", kLegacyVersion}, {"capabilities", json::object()}, {"clientInfo", info}}}};
        send_member(member, std::move(request), Sent{Kind::initialize, member, fanout->second.raw_id, {}, key});
        return;
    }
    if (result != nullptr) {
        fanout->second.results[member] = *result;
        members_[member].modern = !initialize;
        if (initialize) env_.to_member(member, jsonrpc::notification("notifications/initialized"));
    } else {
        const json* error = json_read::object_at(reply, "error");
        fanout->second.results[member] = json{{"error", error != nullptr ? *error : json::object()}};
    }
    if (--fanout->second.remaining == 0) finish_fanout(key);
}

void GroupRouter::finish_modern(Fanout& fanout) {
    for (const auto& [member, result] : fanout.results) {
        Member& m = members_[member];
        if (m.state == MemberState::left_out) continue;
        if (const json* error = json_read::object_at(result, "error")) {
            m.state = MemberState::left_out;
            m.why = "it could not serve a 2026-07-28 client: " + json_read::string_or(*error, "message", "an error");
            env_.note("group '" + spec_.name + "': server '" + spec_.members[member].server +
                      "' is left out of this session: " + m.why);
            continue;
        }
        m.state = MemberState::active;
        m.result = result;
        if (const json* caps = json_read::object_at(result, "capabilities")) m.capabilities = *caps;
    }
    initializing_ = false;
    initialized_ = true;
    protocol_ = std::string(kModernProtocolVersion);
    std::list<std::string> queued = std::move(before_initialize_);
    before_initialize_.clear();
    early_requests_ = 0;
    early_bytes_ = 0;
    bool any = false;
    for (const Member& member : members_) any = any || member.state == MemberState::active;
    if (!any) {
        std::string why = "no server of the group could serve this session";
        for (std::size_t i = 0; i < members_.size(); ++i)
            why += (i == 0 ? ": " : "; ") + spec_.members[i].server + ": " + members_[i].why;
        reply_error(fanout.raw_id, jsonrpc::kInternalError, why);
    } else {
        // The request that began it all is handled now, then what came meanwhile.
        inbox_.push_back(Inbound{Source::client, 0, std::move(modern_trigger_)});
    }
    modern_trigger_.clear();
    for (std::string& line : queued) inbox_.push_back(Inbound{Source::client, 0, std::move(line)});
}

json GroupRouter::discover_result() const {
    if (!spec_.prefix && members_[0].modern) return members_[0].result;  // a server served alone
    json result = {{"supportedVersions", json::array({kModernProtocolVersion})},
                   {"capabilities", merged_capabilities()},
                   {"resultType", "complete"},
                   {"_meta", {{"io.modelcontextprotocol/serverInfo",
                               {{"name", spec_.name}, {"title", "mcpd group " + spec_.name}, {"version", "1"}}}}}};
    if (std::string instructions = joined_instructions(); !instructions.empty())
        result["instructions"] = std::move(instructions);
    return result;
}

void GroupRouter::start_listen(const json& message, std::string_view raw_id) {
    const json* params = json_read::object_at(message, "params");
    const json* filter = params != nullptr ? json_read::object_at(*params, "notifications") : nullptr;
    if (filter == nullptr) {
        reply_error(raw_id, jsonrpc::kInvalidParams,
                    "params.notifications must be an object such as {\"toolsListChanged\": true}");
        return;
    }
    for (const Stream& stream : streams_) {
        if (stream.raw_id == raw_id) {
            reply_error(raw_id, jsonrpc::kInvalidRequest,
                        "this id is already used by an open subscriptions/listen stream");
            return;
        }
    }
    Stream stream;
    stream.raw_id = std::string(raw_id);
    const json caps = merged_capabilities();
    const auto offered = [&caps](const char* feature) {
        const json* own = json_read::object_at(caps, feature);
        return own != nullptr && json_read::bool_at(*own, "listChanged").value_or(false);
    };
    json honoured = json::object();
    const auto flag = [&](const char* name, const char* feature, bool& into) {
        into = json_read::bool_at(*filter, name).value_or(false) && offered(feature);
        if (into) honoured[name] = true;
    };
    flag("toolsListChanged", "tools", stream.tools);
    flag("promptsListChanged", "prompts", stream.prompts);
    flag("resourcesListChanged", "resources", stream.resources);
    if (const json* uris = json_read::member(*filter, "resourceSubscriptions"); uris != nullptr && uris->is_array()) {
        for (const json& uri : *uris) {
            if (!uri.is_string()) continue;
            const std::string& text = uri.get_ref<const std::string&>();
            const auto owner = owner_of(text);
            if (!owner || !admits(*owner, "resources", text)) continue;
            if (std::find(stream.uris.begin(), stream.uris.end(), text) == stream.uris.end())
                stream.uris.push_back(text);
        }
        if (!stream.uris.empty()) honoured["resourceSubscriptions"] = stream.uris;
    }
    streams_.push_back(std::move(stream));
    // The acknowledgement is the stream's first message; the members' own are dropped.
    env_.to_client(stream_notification("notifications/subscriptions/acknowledged",
                                       {{"notifications", honoured}}, raw_id));
    open_member_listens(streams_.size() - 1);
}

void GroupRouter::open_member_listens(std::size_t index, std::optional<std::size_t> only) {
    Stream& stream = streams_[index];
    for (std::size_t m = 0; m < members_.size(); ++m) {
        if (!active(m) || (only && *only != m)) continue;
        std::vector<std::string> owned;
        for (const std::string& uri : stream.uris) {
            if (owner_of(uri) == m) owned.push_back(uri);
        }
        if (!members_[m].modern) {
            // A legacy member's list_changed comes unasked; its URIs need subscribing.
            for (const std::string& uri : owned) {
                json request = {{"jsonrpc", "2.0"}, {"method", "resources/subscribe"}, {"params", {{"uri", uri}}}};
                send_member(m, std::move(request), Sent{Kind::internal, m, {}});
            }
            continue;
        }
        if (stream.member_listens.contains(m)) continue;
        const json& caps = members_[m].capabilities;
        const auto has = [&caps](const char* feature) { return json_read::object_at(caps, feature) != nullptr; };
        json notifications = json::object();
        if (stream.tools && has("tools")) notifications["toolsListChanged"] = true;
        if (stream.prompts && has("prompts")) notifications["promptsListChanged"] = true;
        if (stream.resources && has("resources")) notifications["resourcesListChanged"] = true;
        if (!owned.empty()) notifications["resourceSubscriptions"] = owned;
        if (notifications.empty()) continue;
        json request = {{"jsonrpc", "2.0"},
                        {"method", "subscriptions/listen"},
                        {"params", {{"notifications", notifications}, {"_meta", modern_meta_}}}};
        stream.member_listens[m] = send_member(m, std::move(request), Sent{Kind::listen, m, {}});
    }
}

void GroupRouter::end_listen(std::string_view raw_id) {
    const auto it = std::find_if(streams_.begin(), streams_.end(),
                                 [&](const Stream& s) { return s.raw_id == raw_id; });
    if (it == streams_.end()) return;
    Stream stream = std::move(*it);
    streams_.erase(it);
    for (const auto& [member, id] : stream.member_listens) {
        sent_.erase(id);
        env_.to_member(member, jsonrpc::cancelled(id, "the client ended the stream"));
    }
    for (const std::string& uri : stream.uris) {
        const auto owner = owner_of(uri);
        if (!owner || members_[*owner].modern || !active(*owner)) continue;
        const bool held = std::any_of(streams_.begin(), streams_.end(), [&](const Stream& s) {
            return std::find(s.uris.begin(), s.uris.end(), uri) != s.uris.end();
        });
        if (held) continue;
        json request = {{"jsonrpc", "2.0"}, {"method", "resources/unsubscribe"}, {"params", {{"uri", uri}}}};
        send_member(*owner, std::move(request), Sent{Kind::internal, *owner, {}});
    }
}

bool GroupRouter::to_streams(std::size_t member, const wire::Envelope& e, std::string_view line) {
    if (!e.subscription_id.empty()) {
        // A modern member's stream: to the client's stream it was opened for.
        const auto id = json_read::as_integer(parse(e.subscription_id.in(line)));
        for (const Stream& stream : streams_) {
            const auto own = stream.member_listens.find(member);
            if (!id || own == stream.member_listens.end() || own->second != static_cast<std::uint64_t>(*id))
                continue;
            if (e.method_is("notifications/subscriptions/acknowledged")) return true;
            std::string out;
            wire::splice(line, {wire::Replacement{e.subscription_id, stream.raw_id}}, out);
            env_.to_client(out);
            return true;
        }
        return false;
    }
    if (members_[member].modern) return false;  // a modern member sends nothing unasked
    bool sent = false;
    const std::string_view method = e.method;
    for (const Stream& stream : streams_) {
        const bool wanted = (method == "notifications/tools/list_changed" && stream.tools) ||
                            (method == "notifications/prompts/list_changed" && stream.prompts) ||
                            (method == "notifications/resources/list_changed" && stream.resources) ||
                            (method == "notifications/resources/updated" &&
                             std::find(stream.uris.begin(), stream.uris.end(), e.uri) != stream.uris.end());
        if (!wanted) continue;
        json params = json::object();
        if (method == "notifications/resources/updated") params["uri"] = e.uri;
        env_.to_client(stream_notification(method, std::move(params), stream.raw_id));
        sent = true;
    }
    return sent;
}

std::string GroupRouter::stream_notification(std::string_view method, json params,
                                             std::string_view raw_id) const {
    // The stream's id goes in byte for byte (1 and "1" differ), in place of a marker.
    params["_meta"][kSubscriptionKey] = 0;
    std::string text = dumped(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
    const std::string marker = std::string("\"") + kSubscriptionKey + "\":0";
    const std::size_t at = text.find(marker);
    if (at != std::string::npos)
        text.replace(at, marker.size(), std::string("\"") + kSubscriptionKey + "\":" + std::string(raw_id));
    return text;
}

}  // namespace mcpd
