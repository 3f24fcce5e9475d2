// SessionTable: what `mcpctl sessions` and `mcpctl status` show of the sessions, to whom.
#include "common/control_protocol.h"
#include "daemon/placement.h"
#include "daemon/session_table.h"

namespace mcpd {

using nlohmann::json;

json SessionTable::group_json(SessionId id, const Entry& entry, const PeerCredentials& asking,
                              const std::string& server_filter) {
    if (!visible_to(id, asking)) return nullptr;
    const ClientTransport& session = *entry.session;
    const GroupSession& group = *entry.group;
    bool named = server_filter.empty() || session.server() == server_filter;
    json members = json::array();
    for (const GroupSession::Member& member : group.members()) {
        const ManagedServer* server = placement_.pool().find(member.server);
        if (server != nullptr && !authority_.may_use(asking, server->config())) return nullptr;
        named = named || member.server == server_filter;
        members.push_back(member.server);
    }
    if (!named) return nullptr;
    json out = {{"id", id},
                {"server", session.server()},
                {"group", members},
                {"pid", session.peer().pid},
                {"uid", session.peer().uid},
                {"transport", session.kind()},
                {"client", {{"name", group.router().client_name()}, {"version", ""}}},
                {"protocol", group.router().protocol()},
                {"in_flight", group.router().unanswered()}};
    if (const auto left = group.router().left_out(); !left.empty()) out["left_out"] = left;
    return out;
}

json SessionTable::groups_json(const PeerCredentials& asking) {
    std::map<std::string, json> groups;
    for (auto& [id, entry] : sessions_) {
        if (!entry.group || group_json(id, entry, asking, {}).is_null()) continue;
        const GroupRouter& router = entry.group->router();
        json& group = groups[router.spec().name];
        if (group.is_null()) {
            json servers = json::array();
            for (const GroupSession::Member& member : entry.group->members())
                servers.push_back(member.server);
            group = {{"name", router.spec().name}, {"servers", servers}, {"sessions", 0}};
        }
        group["sessions"] = group["sessions"].get<int>() + 1;
        for (const auto& [server, why] : router.left_out())
            group["left_out"].push_back({{"session", id}, {"server", server}, {"reason", why}});
    }
    json list = json::array();
    for (auto& [name, group] : groups) list.push_back(std::move(group));
    return list;
}

std::optional<PeerCredentials> SessionTable::peer_of(SessionId id) const {
    if (const auto member = members_.find(id); member != members_.end()) id = member->second.client;
    const auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.session) return std::nullopt;
    return it->second.session->peer();
}

bool SessionTable::visible_to(SessionId id, const PeerCredentials& asking) const {
    if (authority_.trusted(asking)) return true;
    const std::optional<PeerCredentials> peer = peer_of(id);
    return peer && peer->uid == asking.uid;
}

bool SessionTable::any_visible(const ManagedServer& instance, const PeerCredentials& asking) const {
    if (authority_.trusted(asking)) return true;
    for (const SessionSummary& summary : instance.router().summaries())
        if (visible_to(summary.id, asking)) return true;
    return false;
}

json SessionTable::to_json(const std::string& server_filter, const PeerCredentials& asking) {
    json list = json::array();
    const auto now = Clock::now();
    for (auto& [id, entry] : sessions_) {
        const ClientTransport& session = *entry.session;
        if (entry.group) {
            if (json group = group_json(id, entry, asking, server_filter); !group.is_null())
                list.push_back(std::move(group));
            continue;
        }
        if (!server_filter.empty() && session.server() != server_filter) continue;
        ManagedServer* server = placement_.server_of(id, session.server());
        if (server == nullptr || !authority_.may_use(asking, server->config())) continue;
        if (!visible_to(id, asking)) continue;
        json entry_json = {{"id", id},
                           {"server", session.server()},
                           {"pid", session.peer().pid},
                           {"uid", session.peer().uid},
                           {"transport", session.kind()}};
        if (const Project* project = placement_.project_of_session(id)) {
            entry_json["project"] = project->directory;
        }
        for (const SessionSummary& summary : server->router().summaries()) {
            if (summary.id != id) continue;
            entry_json["client"] = {{"name", summary.client_name},
                                    {"version", summary.client_version}};
            entry_json["protocol"] = summary.protocol;
            entry_json["in_flight"] = summary.in_flight;
            entry_json["age_ms"] =
                std::chrono::duration_cast<std::chrono::milliseconds>(now - summary.attached_at)
                    .count();
        }
        list.push_back(std::move(entry_json));
    }
    return list;
}

}  // namespace mcpd
