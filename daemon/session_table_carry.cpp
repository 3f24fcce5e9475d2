// SessionTable: client sessions carried across an upgrade in place (docs/UPGRADE.md). A session
// on the socket or with passed descriptors goes on as it was: its descriptors stay open across
// the exec, what was read from its client and not yet handed on is handed on by the new process,
// and what was queued for it and not yet written is written by the new process.
#include "common/descriptors.h"
#include "common/log.h"
#include "daemon/http/http_transport.h"
#include "daemon/placement.h"
#include "daemon/session_table.h"

namespace mcpd {

namespace {

// A descriptor a session can be carried on: a pipe or a socket (a socket session's: a socket).
bool usable_descriptor(int fd, bool socket_only) {
    return socket_only ? is_socket(fd) : is_pipe_or_socket(fd);
}

}  // namespace

void SessionTable::upgrade_blockers(std::vector<std::string>& lasting,
                                    std::vector<std::string>& passing) const {
    for (const auto& [id, entry] : sessions_) {
        if (entry.group) {
            bool lasting_here = false;
            if (const std::string why = entry.group->router().why_not_carried(lasting_here); !why.empty())
                (lasting_here ? lasting : passing).push_back("group session " + std::to_string(id) + ": " + why);
        }
        const auto* stream = dynamic_cast<const StreamTransport*>(entry.session.get());
        if (stream == nullptr) {
            // An HTTP session: what it waits for is the front door's to say (HttpFront).
            if (entry.session->closed())
                passing.push_back("HTTP session " + std::to_string(id) + " is ending");
            continue;
        }
        std::string why = stream->why_not_carried();
        if (why.empty() && stream->passed_fds() && entry.link == nullptr)
            why = "its mcpctl connect has gone";
        if (why.empty() && batches_.waiting(id)) why = "a batch of its is being answered";
        if (!why.empty())
            passing.push_back("session " + std::to_string(id) + " of " + stream->server() + ": " + why);
    }
}

void SessionTable::hold_input(bool held) {
    input_held_ = held;
    for (auto& [id, entry] : sessions_)
        if (auto* stream = dynamic_cast<StreamTransport*>(entry.session.get()))
            stream->hold_input(held);
}

void SessionTable::hold_output(bool held) {
    for (auto& [id, entry] : sessions_)
        if (auto* stream = dynamic_cast<StreamTransport*>(entry.session.get()))
            stream->hold_output(held);
}

std::vector<CarriedSession> SessionTable::carried() const {
    std::vector<CarriedSession> out;
    for (const auto& [id, entry] : sessions_) {
        if (entry.group) {
            out.push_back(carried_group(id, *entry.session, entry));
            continue;
        }
        ManagedServer* server = placement_.server_of(id, entry.session->server());
        if (server == nullptr) continue;
        std::optional<routing::SessionState> state = server->router().carried_session(id);
        if (!state) continue;
        CarriedSession c = carried_client(id, *entry.session, entry);
        c.router = std::move(*state);
        carried_route(id, c.instance, c.working_project);
        if (const InstanceKey* modern = placement_.modern_route_of(id))
            c.modern.emplace(modern->kind, modern->qualifier);
        out.push_back(std::move(c));
    }
    return out;
}

CarriedSession SessionTable::carried_client(SessionId id, const ClientTransport& session,
                                            const Entry& entry) const {
    CarriedSession c;
    c.id = id;
    c.server = session.server();
    const auto* stream = dynamic_cast<const StreamTransport*>(&session);
    if (stream == nullptr) {
        c.http = static_cast<const HttpTransport&>(session).carried();
        return c;
    }
    c.passed_fds = stream->passed_fds();
    c.fd = stream->input_fd();
    c.output_fd = stream->output_fd();
    c.link_fd = entry.link != nullptr ? entry.link->fd() : -1;
    c.unread = stream->unread();
    c.unwritten = stream->unwritten();
    return c;
}

void SessionTable::carried_route(SessionId id, std::optional<CarriedInstance>& instance,
                                 std::optional<Project>& working) const {
    if (const InstanceKey* key = placement_.route_of(id); key != nullptr && key->kind != InstanceKind::shared)
        instance = CarriedInstance{key->kind, key->qualifier, std::nullopt};
    if (const Project* project = placement_.working_project_of(id)) working = *project;
}

CarriedSession SessionTable::carried_group(SessionId id, const ClientTransport& session,
                                           const Entry& entry) const {
    CarriedSession c = carried_client(id, session, entry);
    c.router.id = id;  // not a router's session: its members are
    const GroupSpec& spec = entry.group->router().spec();
    CarriedGroup group;
    group.kind = spec.from_registry ? "registry" : spec.prefix ? "adhoc" : "solo";
    group.name = spec.name;
    group.router = entry.group->router().carried();
    for (const GroupSession::Member& m : entry.group->members()) {
        CarriedGroupMember member;
        member.id = m.id;
        member.server = m.server;
        if (ManagedServer* server = placement_.server_of(m.id, m.server))
            member.router = server->router().carried_session(m.id);
        carried_route(m.id, member.instance, member.working_project);
        group.members.push_back(std::move(member));
    }
    c.group = std::move(group);
    return c;
}

Result<std::unique_ptr<ClientTransport>> SessionTable::carried_transport(
    CarriedSession& c, ControlConnection* link, std::unique_ptr<ClientTransport> http) {
    if (http != nullptr) return http;
    UniqueFd input_fd(c.fd);
    UniqueFd output_fd(c.passed_fds ? c.output_fd : -1);
    const std::string what = "session " + std::to_string(c.id) + " of " + c.server;
    if (!usable_descriptor(input_fd.get(), !c.passed_fds) ||
        (c.passed_fds && !usable_descriptor(output_fd.get(), false)))
        return permanent_failure(what + ": its descriptors are not a session's; it is dropped");
    std::optional<PeerCredentials> peer;
    if (!c.passed_fds) {
        // Who it acts as is read again from the socket, as at any connection.
        peer = peer_credentials(input_fd.get());
    } else if (link != nullptr) {
        peer = link->peer();
    }
    if (!peer) return permanent_failure(what + ": who it acts as cannot be read; it is dropped");
    set_close_on_exec(input_fd.get());
    if (output_fd) set_close_on_exec(output_fd.get());
    event_base* base = loop_.base();
    BufferEvent input = BufferEvent::over(base, std::move(input_fd));
    BufferEvent output = c.passed_fds ? BufferEvent::over(base, std::move(output_fd)) : BufferEvent();
    if (input == nullptr || (c.passed_fds && output == nullptr))
        return permanent_failure(what + ": libevent could not allocate its buffers");
    auto session = std::make_unique<StreamTransport>(
        c.id, c.server, *peer, std::move(input), std::move(output), loop_.writes(),
        settings_.max_message_bytes, settings_.max_session_queue_bytes, budget_);
    session->resume(c.unread, c.unwritten);
    return std::unique_ptr<ClientTransport>(std::move(session));
}

Result<Done> SessionTable::adopt_carried(ManagedServer& server, const InstanceKey& key,
                                         const std::optional<InstanceKey>& modern,
                                         CarriedSession c, ControlConnection* link,
                                         std::unique_ptr<ClientTransport> http) {
    Result<std::unique_ptr<ClientTransport>> session = carried_transport(c, link, std::move(http));
    if (!session) return session.failure();
    // A socket session counts on its user's connections; a linked one on its link's, an HTTP
    // one on none (the front door bounds its own).
    ConnectionLimits::Slot slot = link == nullptr && !c.http ? limits_.take(session.value()->peer())
                                                             : ConnectionLimits::Slot();
    // Routed where it was, never placed anew (which would start a private process).
    placement_.restore_route(c.id, key, modern, std::move(c.working_project));
    open(server, std::move(session).value(), std::move(slot), link, std::move(c.router));
    return Done{};
}

Result<Done> SessionTable::adopt_carried_group(GroupSpec spec, CarriedSession c,
                                               ControlConnection* link,
                                               std::unique_ptr<ClientTransport> http) {
    // The descriptors first: whatever fails below, they are closed with the transport.
    Result<std::unique_ptr<ClientTransport>> session = carried_transport(c, link, std::move(http));
    if (!session) return session.failure();
    CarriedGroup& carried = *c.group;
    if (spec.members.size() != carried.members.size())
        return permanent_failure("group session " + std::to_string(c.id) + " of " + c.server +
                                 ": its group has other members now; it is dropped");
    std::vector<GroupSession::Member> members;
    for (const CarriedGroupMember& m : carried.members) members.push_back({m.id, m.server});
    const SessionId id = c.id;
    auto group = std::make_unique<GroupSession>(
        id, std::move(spec), std::move(members), placement_,
        [this, id](std::span<const std::string_view> pieces) { to_client(id, pieces); });
    if (Result<Done> restored = group->router().restore_carried(carried.router); !restored)
        return permanent_failure("group session " + std::to_string(id) + ": " + restored.error());
    // Each member on the process it was on; one left out stays out.
    std::vector<ManagedServer*> instances;
    std::vector<InstanceKey> keys;
    for (const CarriedGroupMember& m : carried.members) {
        keys.push_back(m.instance ? InstanceKey{m.server, m.instance->kind, m.instance->qualifier}
                                  : InstanceKey::shared_of(m.server));
        ManagedServer* instance = m.router ? placement_.pool().find(keys.back()) : nullptr;
        if (m.router && instance == nullptr)
            return permanent_failure("group session " + std::to_string(id) + ": member " + m.server +
                                     " is on a process that is not here");
        instances.push_back(instance);
    }
    std::vector<std::optional<routing::SessionState>> states;
    for (std::size_t i = 0; i < carried.members.size(); ++i) {
        CarriedGroupMember& m = carried.members[i];
        if (instances[i] != nullptr)
            placement_.restore_route(m.id, keys[i], std::nullopt, std::move(m.working_project));
        states.push_back(std::move(m.router));
    }
    ConnectionLimits::Slot slot = link == nullptr && !c.http ? limits_.take(session.value()->peer())
                                                             : ConnectionLimits::Slot();
    open_group(std::move(group), std::move(instances), std::move(session).value(), std::move(slot),
               link, std::move(states));
    return Done{};
}

}  // namespace mcpd
