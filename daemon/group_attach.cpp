#include "daemon/group_attach.h"

#include <algorithm>

#include "common/control_protocol.h"
#include "common/log.h"
#include "config/registry_group.h"
#include "daemon/daemon.h"

namespace mcpd {

GroupSpec registry_group(const config::GroupConfig& group) {
    GroupSpec spec;
    spec.name = group.name;
    spec.separator = group.separator;
    spec.from_registry = true;
    for (const config::GroupMember& member : group.members)
        spec.members.push_back(GroupMemberSpec{member.server, group.filters, member.filters, {}});
    return spec;
}

GroupSpec adhoc_group(const std::vector<std::string>& servers) {
    GroupSpec spec;
    for (const std::string& server : servers) {
        spec.name += (spec.name.empty() ? "" : "+") + server;
        spec.members.push_back(GroupMemberSpec{server, {}, {}, {}});
    }
    return spec;
}

std::optional<std::vector<std::string>> adhoc_members(std::string_view name) {
    constexpr std::size_t kMaxMembers = 64;
    if (name.find('+') == std::string_view::npos) return std::nullopt;
    std::vector<std::string> members;
    while (true) {
        const std::size_t plus = name.find('+');
        const std::string_view member = name.substr(0, plus);
        if (member.empty() || members.size() == kMaxMembers ||
            member.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
                std::string_view::npos ||
            std::find(members.begin(), members.end(), member) != members.end())
            return std::nullopt;
        members.emplace_back(member);
        if (plus == std::string_view::npos) break;
        name.remove_prefix(plus + 1);
    }
    return members;
}

GroupSpec solo_group(const config::ServerConfig& server) {
    GroupSpec spec;
    spec.name = server.name;
    spec.prefix = false;
    spec.members.push_back(GroupMemberSpec{server.name, {}, {}, {}});
    return spec;
}

namespace {

// Two members whose names, with the separator, could make one tool name of both.
std::optional<std::string> clash_of(const GroupSpec& spec) {
    if (!spec.prefix) return std::nullopt;
    std::vector<std::string> servers;
    for (const GroupMemberSpec& member : spec.members) servers.push_back(member.server);
    const auto clash = config::prefix_clash(servers, spec.separator);
    if (!clash) return std::nullopt;  // a registry group was checked when the registry was read
    std::string message = "these servers cannot share one session: " +
                          config::prefix_clash_example(servers, spec.separator, *clash) +
                          "; rename one of the two servers";
    if (const auto other = config::clash_free_separator(servers, spec.separator)) {
        message += ", or declare them as a group in the registry with separator = \"" + *other +
                   "\" ([groups.NAME]) and connect to that";
    }
    return message;
}

}  // namespace

std::variant<GroupPlan, GroupRefusal> plan_group(Daemon& daemon, const PeerCredentials& peer,
                                                 GroupSpec spec, const std::string& cwd) {
    const std::size_t count = spec.members.size();
    std::vector<ManagedServer*> servers;
    for (GroupMemberSpec& member : spec.members) {
        ManagedServer* server = daemon.pool().find(member.server);
        if (server == nullptr || !daemon.authority().may_use(peer, server->config())) {
            // A group with a server the peer may not use is, to that peer, no group at all.
            return GroupRefusal{control::code::not_found, {}, member.server};
        }
        member.server_filters = server->config().filters;
        servers.push_back(server);
    }
    if (const auto clash = clash_of(spec)) return GroupRefusal{control::code::bad_request, *clash, {}};
    GroupPlan plan;
    plan.projects.resize(count);
    plan.failed.resize(count);
    const bool trusted = daemon.authority().trusted(peer);
    for (std::size_t i = 0; i < count; ++i) {
        if (servers[i]->supervisor().state() == ServerState::failed) {
            // The others still serve; this one is out of the session from the start.
            plan.failed[i] = "the server is failed: " + servers[i]->failure();
            continue;
        }
        Placement::Admission admission = daemon.placement().admit(*servers[i], cwd, peer, trusted);
        if (!admission.refused_code.empty())
            return GroupRefusal{admission.refused_code, admission.refusal, {}};
        plan.projects[i] = std::move(admission.project);
    }
    if (count == 1 && !plan.failed[0].empty()) {
        return GroupRefusal{control::code::failed,
                            "server '" + servers[0]->name() + "' is failed: " + servers[0]->failure(), {}};
    }
    plan.id = daemon.sessions().next_id();
    for (std::size_t i = 0; i < count; ++i)
        plan.members.push_back(GroupSession::Member{daemon.sessions().next_id(), spec.members[i].server});
    plan.spec = std::move(spec);
    return plan;
}

BuiltGroup build_group(Daemon& daemon, GroupPlan plan) {
    BuiltGroup built;
    for (std::size_t i = 0; i < plan.members.size(); ++i) {
        ManagedServer* server = daemon.pool().find(plan.members[i].server);
        if (server == nullptr && plan.failed[i].empty()) plan.failed[i] = "the server was removed";
        built.instances.push_back(
            server == nullptr || !plan.failed[i].empty()
                ? nullptr
                : &daemon.placement().place(*server, plan.members[i].id, plan.projects[i]));
    }
    SessionTable& table = daemon.sessions();
    const SessionId id = plan.id;
    built.group = std::make_unique<GroupSession>(
        id, std::move(plan.spec), std::move(plan.members), daemon.placement(),
        [&table, id](std::span<const std::string_view> pieces) { table.to_client(id, pieces); });
    for (std::size_t i = 0; i < plan.failed.size(); ++i) {
        if (plan.failed[i].empty()) continue;
        log::info(built.group->router().spec().name, "'" + built.group->members()[i].server +
                                                         "' is left out of session " +
                                                         std::to_string(id) + ": " + plan.failed[i]);
        built.group->router().exclude(i, plan.failed[i]);
    }
    return built;
}

}  // namespace mcpd
