// A group session's initialize (one answer from every member's) and logging/setLevel (to every
// member that logs).
#include "common/json_read.h"
#include "daemon/mux/group_router.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/peer_names.h"

namespace mcpd {

using nlohmann::json;

void GroupRouter::start_initialize(const json& message, std::string_view raw_id) {
    initializing_ = true;
    era_ = Era::legacy;
    const json* params = json_read::object_at(message, "params");
    initialize_params_ = params != nullptr ? *params : json::object();
    if (const json* info = json_read::object_at(initialize_params_, "clientInfo"))
        client_name_ = cut_to(json_read::string_or(*info, "name", ""), kMaxClientTextBytes);
    fan_out("initialize-", raw_id, Kind::initialize,
            {{"jsonrpc", "2.0"}, {"method", "initialize"}, {"params", initialize_params_}});
}

void GroupRouter::fan_out(std::string_view prefix, std::string_view raw_id, Kind kind,
                          const json& request) {
    const std::string key = std::string(prefix) + std::to_string(next_fanout_++);
    Fanout& fanout = fanouts_[key];
    fanout.raw_id = std::string(raw_id);
    waiting_[fanout.raw_id] = 0;
    for (const Member& member : members_) fanout.remaining += member.state == MemberState::left_out ? 0 : 1;
    if (fanout.remaining == 0) {
        finish_fanout(key);
        return;
    }
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (members_[i].state != MemberState::left_out)
            send_member(i, request, Sent{kind, i, fanout.raw_id, {}, key});
    }
}

std::string GroupRouter::joined_instructions() const {
    std::string instructions;
    for (std::size_t i = 0; i < members_.size(); ++i) {
        const std::string* text = json_read::string_at(members_[i].result, "instructions");
        if (!active(i) || text == nullptr || text->empty()) continue;
        if (!instructions.empty()) instructions += "\n\n";
        instructions += "## " + spec_.members[i].server + "\n" + *text;
    }
    return instructions;
}

void GroupRouter::finish_fanout(const std::string& key) {
    const auto found = fanouts_.find(key);
    if (found == fanouts_.end()) return;
    Fanout fanout = std::move(found->second);
    fanouts_.erase(found);
    waiting_.erase(fanout.raw_id);
    if (key.starts_with("initialize-")) {
        finish_initialize(fanout);
        return;
    }
    if (key.starts_with("modern-")) {
        finish_modern(fanout);
        return;
    }
    // logging/setLevel: answered when every member that logs has taken it; the first error
    // is the answer when one refused.
    for (const auto& [member, result] : fanout.results) {
        if (const json* error = json_read::object_at(result, "error")) {
            reply_error(fanout.raw_id, static_cast<int>(json_read::integer_at(*error, "code").value_or(-32603)),
                        spec_.members[member].server + ": " +
                            json_read::string_or(*error, "message", "refused the level"));
            return;
        }
    }
    reply(fanout.raw_id, json::object());
}

void GroupRouter::finish_initialize(Fanout& fanout) {
    // The protocol version: the one most members answered with (the client's own on a tie,
    // else the newest); a member that answered another is left out.
    std::map<std::string, int> votes;
    for (const auto& [member, result] : fanout.results) {
        if (const std::string* version = json_read::string_at(result, "protocolVersion"))
            ++votes[*version];
    }
    const std::string requested = json_read::string_or(initialize_params_, "protocolVersion", "");
    std::string chosen;
    int best = 0;
    for (const auto& [version, count] : votes) {  // ascending: a later one is newer
        if (count > best || (count == best && (version == requested || chosen != requested))) {
            chosen = version;
            best = count;
        }
    }
    for (const auto& [member, result] : fanout.results) {
        Member& m = members_[member];
        if (m.state == MemberState::left_out) continue;
        if (const json* error = json_read::object_at(result, "error")) {
            m.state = MemberState::left_out;
            m.why = "its initialize failed: " + json_read::string_or(*error, "message", "an error");
        } else if (json_read::string_or(result, "protocolVersion", "") != chosen) {
            m.state = MemberState::left_out;
            m.why = "it speaks protocol " + json_read::string_or(result, "protocolVersion", "?") +
                    ", not the group's " + chosen;
        } else {
            m.state = MemberState::active;
            m.result = result;
            if (const json* caps = json_read::object_at(result, "capabilities")) m.capabilities = *caps;
            continue;
        }
        env_.note("group '" + spec_.name + "': server '" + spec_.members[member].server +
                  "' is left out of this session: " + m.why);
    }
    initializing_ = false;
    if (chosen.empty()) {
        std::string why = "no server of the group could be initialized";
        for (std::size_t i = 0; i < members_.size(); ++i)
            why += (i == 0 ? ": " : "; ") + spec_.members[i].server + ": " + members_[i].why;
        reply_error(fanout.raw_id, jsonrpc::kInternalError, why);
    } else {
        initialized_ = true;
        protocol_ = chosen;
        json result;
        if (!spec_.prefix) {
            result = members_[0].result;  // a server served alone stays itself
        } else {
            result = {{"protocolVersion", chosen},
                      {"capabilities", merged_capabilities()},
                      {"serverInfo", {{"name", spec_.name}, {"title", "mcpd group " + spec_.name},
                                      {"version", "1"}}}};
            if (std::string instructions = joined_instructions(); !instructions.empty())
                result["instructions"] = std::move(instructions);
        }
        reply(fanout.raw_id, result);
    }
    // What the client sent meanwhile, in order.
    std::list<std::string> queued = std::move(before_initialize_);
    before_initialize_.clear();
    early_requests_ = 0;
    early_bytes_ = 0;  // handled in this same turn, from the inbox
    for (std::string& line : queued) inbox_.push_back(Inbound{Source::client, 0, std::move(line)});
}

json GroupRouter::merged_capabilities() const {
    json merged = json::object();
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (members_[i].state == MemberState::left_out || members_[i].state == MemberState::starting)
            continue;
        const json& caps = members_[i].capabilities;
        for (const char* feature : {"tools", "prompts", "resources"}) {
            const json* own = json_read::object_at(caps, feature);
            if (own == nullptr) continue;
            json& into = merged[feature];
            if (!into.is_object()) into = json::object();
            // A flag where the member owning the feature has it.
            for (const char* flag : {"listChanged", "subscribe"}) {
                if (json_read::bool_at(*own, flag).value_or(false)) into[flag] = true;
            }
        }
        for (const char* feature : {"logging", "completions"}) {
            if (json_read::object_at(caps, feature) != nullptr) merged[feature] = json::object();
        }
        if (const json* experimental = json_read::object_at(caps, "experimental")) {
            for (const auto& [key, value] : experimental->items()) merged["experimental"][key] = value;
        }
    }
    return merged;
}

void GroupRouter::start_set_level(const json& message, std::string_view raw_id) {
    const json* params = json_read::object_at(message, "params");
    const std::string key = "level-" + std::to_string(next_fanout_++);
    Fanout fanout;
    fanout.raw_id = std::string(raw_id);
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (active(i) && json_read::object_at(members_[i].capabilities, "logging") != nullptr)
            ++fanout.remaining;
    }
    if (fanout.remaining == 0) {
        reply_error(raw_id, jsonrpc::kMethodNotFound,
                    "method not found: no server of the group has logging");
        return;
    }
    fanouts_[key] = fanout;
    waiting_[fanout.raw_id] = 0;
    for (std::size_t i = 0; i < members_.size(); ++i) {
        if (!active(i) || json_read::object_at(members_[i].capabilities, "logging") == nullptr) continue;
        json request = {{"jsonrpc", "2.0"}, {"method", "logging/setLevel"},
                        {"params", params != nullptr ? *params : json::object()}};
        send_member(i, std::move(request), Sent{Kind::set_level, i, fanout.raw_id, {}, key});
    }
}

}  // namespace mcpd
