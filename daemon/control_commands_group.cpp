// Attaching a group session: a [groups.NAME] of the registry, `mcpctl connect a b c`, or a
// server with filters served alone (docs/GROUPS.md).
#include "common/log.h"
#include "config/registry_group.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"

namespace mcpd {

GroupSpec ControlCommands::registry_group(const config::GroupConfig& group) {
    GroupSpec spec;
    spec.name = group.name;
    spec.separator = group.separator;
    spec.from_registry = true;
    for (const config::GroupMember& member : group.members)
        spec.members.push_back(GroupMemberSpec{member.server, group.filters, member.filters, {}});
    return spec;
}

GroupSpec ControlCommands::adhoc_group(const std::vector<std::string>& servers) {
    GroupSpec spec;
    for (const std::string& server : servers) {
        spec.name += (spec.name.empty() ? "" : "+") + server;
        spec.members.push_back(GroupMemberSpec{server, {}, {}, {}});
    }
    return spec;
}

GroupSpec ControlCommands::solo_group(const config::ServerConfig& server) {
    GroupSpec spec;
    spec.name = server.name;
    spec.prefix = false;
    spec.members.push_back(GroupMemberSpec{server.name, {}, {}, {}});
    return spec;
}

void ControlCommands::attach_group(ControlConnection& c, const control::AttachRequest& request,
                                   GroupSpec spec) {
    const std::size_t count = spec.members.size();
    std::vector<ManagedServer*> servers;
    for (GroupMemberSpec& member : spec.members) {
        ManagedServer* server = daemon_.pool().find(member.server);
        if (server == nullptr || !allowed(c, *server)) {
            // A group with a server the peer may not use is, to that peer, no group at all:
            // one answer, as for a name that does not exist.
            const std::string asked = request.servers.empty() ? request.server : member.server;
            const Result<std::vector<ManagedServer*>> missing = resolve(c, {asked});
            c.reply_error(control::code::not_found,
                          missing ? "no server named '" + asked + "'" : missing.error());
            return;
        }
        member.server_filters = server->config().filters;
        servers.push_back(server);
    }
    if (clashing_names_refused(c, spec)) return;
    std::vector<std::optional<Project>> projects(count);
    std::vector<std::string> failed(count);
    for (std::size_t i = 0; i < count; ++i) {
        if (servers[i]->supervisor().state() == ServerState::failed) {
            // The others still serve; this one is out of the session from the start.
            failed[i] = "the server is failed: " + servers[i]->failure();
            continue;
        }
        if (!admit(c, *servers[i], request.cwd, projects[i])) return;
    }
    if (count == 1 && !failed[0].empty()) {
        c.reply_error(control::code::failed,
                      "server '" + servers[0]->name() + "' is failed: " + servers[0]->failure());
        return;
    }
    const SessionId id = daemon_.sessions().next_id();
    std::vector<GroupSession::Member> members;
    for (std::size_t i = 0; i < count; ++i)
        members.push_back(GroupSession::Member{daemon_.sessions().next_id(), spec.members[i].server});
    const PeerCredentials peer = c.peer();
    c.reply_ok(control::to_json(control::AttachResult{request.server, id, request.pass_fds}));
    if (!request.pass_fds) {
        BufferEvent bev = c.hand_over();
        if (bev == nullptr) return;  // cut off: it never read its replies
        open_group(id, std::move(spec), std::move(members), std::move(projects), std::move(failed),
                   peer, std::move(bev), {}, nullptr);
        return;
    }
    ControlConnection* link = &c;
    c.receive_fds(
        [this, id, spec, members, projects, failed, peer, link](std::vector<UniqueFd> fds) {
            BufferEvent input, output;
            if (!passed_ends(*link, fds, input, output)) return;
            open_group(id, spec, members, projects, failed, peer, std::move(input),
                       std::move(output), link);
        },
        [this, id] { daemon_.sessions().end(id, "mcpctl connect went away", true); });
}

bool ControlCommands::clashing_names_refused(ControlConnection& c, const GroupSpec& spec) {
    if (!spec.prefix) return false;
    std::vector<std::string> servers;
    for (const GroupMemberSpec& member : spec.members) servers.push_back(member.server);
    const auto clash = config::prefix_clash(servers, spec.separator);
    if (!clash) return false;  // a registry group was checked when the registry was read
    std::string message = "these servers cannot share one session: " +
                          config::prefix_clash_example(servers, spec.separator, *clash) +
                          "; rename one of the two servers";
    if (const auto other = config::clash_free_separator(servers, spec.separator)) {
        message += ", or declare them as a group in the registry with separator = \"" + *other +
                   "\" ([groups.NAME]) and connect to that";
    }
    c.reply_error(control::code::bad_request, message);
    return true;
}

void ControlCommands::open_group(SessionId id, GroupSpec spec,
                                 std::vector<GroupSession::Member> members,
                                 std::vector<std::optional<Project>> projects,
                                 std::vector<std::string> failed, const PeerCredentials& peer,
                                 BufferEvent input, BufferEvent output, ControlConnection* link) {
    std::vector<ManagedServer*> instances;
    for (std::size_t i = 0; i < members.size(); ++i) {
        ManagedServer* server = daemon_.pool().find(members[i].server);
        if (server == nullptr && failed[i].empty()) failed[i] = "the server was removed";
        instances.push_back(server == nullptr || !failed[i].empty()
                                ? nullptr
                                : &daemon_.placement().place(*server, members[i].id, projects[i]));
    }
    SessionTable& table = daemon_.sessions();
    auto group = std::make_unique<GroupSession>(
        id, std::move(spec), std::move(members), daemon_.placement(),
        [&table, id](std::string_view line) { table.to_client(id, line); });
    for (std::size_t i = 0; i < failed.size(); ++i) {
        if (failed[i].empty()) continue;
        log::info(group->router().spec().name, "'" + group->members()[i].server +
                                                   "' is left out of session " +
                                                   std::to_string(id) + ": " + failed[i]);
        group->router().exclude(i, failed[i]);
    }
    table.open_group(std::move(group), std::move(instances), peer, std::move(input),
                     std::move(output), link);
}

}  // namespace mcpd
