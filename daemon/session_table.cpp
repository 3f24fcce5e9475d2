#include "daemon/session_table.h"

#include "common/control_protocol.h"
#include "common/log.h"
#include "daemon/placement.h"

namespace mcpd {

using nlohmann::json;

SessionTable::SessionTable(EventLoop& loop, const config::DaemonConfig& settings,
                           Placement& placement,
                           const Authority& authority, ConnectionLimits& limits,
                           OutputBudget& budget)
    : loop_(loop),
      settings_(settings),
      placement_(placement),
      authority_(authority),
      limits_(limits),
      budget_(budget),
      batches_(settings.max_message_bytes) {}

SessionTable::~SessionTable() = default;

void SessionTable::open(ManagedServer& server, SessionId id, const PeerCredentials& peer,
                        BufferEvent input, BufferEvent output, ControlConnection* link) {
    auto session = std::make_unique<StreamTransport>(
        id, server.name(), peer, std::move(input), std::move(output), loop_.writes(),
        settings_.max_message_bytes, settings_.max_session_queue_bytes, budget_);
    // A session on the socket takes its connection's place (freed on the next turn); one
    // with passed descriptors lives on its link, which keeps its own.
    ConnectionLimits::Slot slot = link == nullptr ? limits_.take(peer) : ConnectionLimits::Slot();
    open(server, std::move(session), std::move(slot), link);
}

void SessionTable::open(ManagedServer& server, std::unique_ptr<ClientTransport> session,
                        ConnectionLimits::Slot slot, ControlConnection* link,
                        std::optional<routing::SessionState> carried) {
    const std::string name = server.name();
    const SessionId id = session->id();
    const PeerCredentials peer = session->peer();
    ClientTransport* raw = session.get();
    sessions_[id] = Entry{std::move(session), link, std::move(slot), nullptr};
    if (link != nullptr) {
        link->on_close([this, id] {
            const auto it = sessions_.find(id);
            if (it != sessions_.end()) it->second.link = nullptr;
        });
    }
    const std::string kind = raw->kind();
    log::info(name, "session " + std::to_string(id) + (carried ? " carried across the upgrade" : " attached") +
                        " (pid " + std::to_string(peer.pid) + ", uid " + std::to_string(peer.uid) +
                        (kind == "fds" ? ", passed descriptors)" : kind == "http" ? ", over HTTP)" : ", on the socket)"));
    if (carried) server.router().adopt_carried(std::move(*carried));
    else server.router().attach(id);
    server.sessions_changed();
    // Opened while an upgrade waits for quiet: held like the others, from its first line.
    if (auto* stream = dynamic_cast<StreamTransport*>(raw); stream != nullptr && input_held_)
        stream->hold_input(true);
    raw->start(callbacks(name));
}

void SessionTable::open_group(std::unique_ptr<GroupSession> group,
                              std::vector<ManagedServer*> instances, const PeerCredentials& peer,
                              BufferEvent input, BufferEvent output, ControlConnection* link) {
    const SessionId id = group->client();
    auto session = std::make_unique<StreamTransport>(
        id, group->router().spec().name, peer, std::move(input), std::move(output),
        loop_.writes(), settings_.max_message_bytes, settings_.max_session_queue_bytes, budget_);
    ConnectionLimits::Slot slot = link == nullptr ? limits_.take(peer) : ConnectionLimits::Slot();
    open_group(std::move(group), std::move(instances), std::move(session), std::move(slot), link);
}

void SessionTable::open_group(std::unique_ptr<GroupSession> group,
                              std::vector<ManagedServer*> instances,
                              std::unique_ptr<ClientTransport> session,
                              ConnectionLimits::Slot slot, ControlConnection* link,
                              std::vector<std::optional<routing::SessionState>> carried) {
    const SessionId id = group->client();
    const std::string name = group->router().spec().name;
    const PeerCredentials peer = session->peer();
    ClientTransport* raw = session.get();
    GroupSession* members = group.get();
    sessions_[id] = Entry{std::move(session), link, std::move(slot), std::move(group)};
    if (link != nullptr) {
        link->on_close([this, id] {
            const auto it = sessions_.find(id);
            if (it != sessions_.end()) it->second.link = nullptr;
        });
    }
    std::string names;
    for (const GroupSession::Member& member : members->members())
        names += (names.empty() ? "" : ", ") + member.server;
    log::info(name, "group session " + std::to_string(id) +
                        (carried.empty() ? " attached" : " carried across the upgrade") + " (pid " +
                        std::to_string(peer.pid) + ", uid " + std::to_string(peer.uid) +
                        ") over " + names);
    for (std::size_t i = 0; i < instances.size(); ++i) {
        const SessionId member = members->members()[i].id;
        members_[member] = MemberOf{id, i};
        if (instances[i] == nullptr) continue;
        if (i < carried.size() && carried[i]) instances[i]->router().adopt_carried(std::move(*carried[i]));
        else instances[i]->router().attach(member);
        instances[i]->sessions_changed();
    }
    if (auto* stream = dynamic_cast<StreamTransport*>(raw); stream != nullptr && input_held_)
        stream->hold_input(true);
    raw->start(group_callbacks(name, *members));
}

ClientTransport::Callbacks SessionTable::group_callbacks(const std::string& name, GroupSession& group) {
    ClientTransport::Callbacks callbacks = this->callbacks(name);
    // The client's lines go to its group, which lives as long as the session's entry.
    callbacks.on_line = [this, &group](ClientTransport& session, wire::PaddedText line) {
        on_group_line(session, group, line);
    };
    callbacks.on_scanned_line = nullptr;  // the group reads each line itself
    callbacks.on_reply_lost = nullptr;
    return callbacks;
}

GroupSession* SessionTable::group_of_member(SessionId id, std::size_t& index) {
    if (members_.empty()) return nullptr;  // no group sessions: nothing to look up
    const auto member = members_.find(id);
    if (member == members_.end()) return nullptr;
    const Entry* entry = sessions_.lookup(member->second.client);
    if (entry == nullptr || !entry->group) return nullptr;
    index = member->second.index;
    return entry->group.get();
}

ClientTransport::Callbacks SessionTable::callbacks(const std::string& name) {
    ClientTransport::Callbacks callbacks;
    callbacks.on_line = [this, name](ClientTransport& session, wire::PaddedText line) {
        on_line(session, name, line);
    };
    callbacks.on_scanned_line = [this, name](ClientTransport& session, std::string_view line,
                                             const wire::Envelope& envelope) {
        on_scanned_line(session, name, line, envelope);
    };
    callbacks.on_closed = [this](ClientTransport& session, const std::string& reason, bool by_client) {
        on_closed(session, reason, by_client);
    };
    callbacks.on_input_ended = [this](ClientTransport& session) {
        loop_.defer([this, ended = session.id()] { finish_if_answered(ended); });
    };
    callbacks.on_reply_lost = [this, name](ClientTransport& session, std::string_view raw_id,
                                           std::string_view why) {
        if (ManagedServer* target = placement_.server_of(session.id(), name)) {
            target->router().on_session_reply_lost(session.id(), raw_id, why);
        }
    };
    return callbacks;
}

void SessionTable::on_line(ClientTransport& session, const std::string& name, wire::PaddedText line) {
    ManagedServer* target = placement_.server_of(session.id(), name);
    if (target == nullptr) return;
    Router& router = target->router();
    const SessionId sid = session.id();
    // A 2025-03-26 batch: each of its messages is routed as a line of its own.
    const bool batches = looks_like_batch(line.text) && router.protocol_of(sid) == kBatchProtocol;
    if (!batches && !batches_.waiting(sid)) {
        router.on_session_line(sid, line);  // every ordinary line: nothing to split or watch
        return;
    }
    batches_.on_line(
        sid, line, batches,
        [&router, sid](wire::PaddedText one) { router.on_session_line(sid, one); },
        [&session](std::string_view reply) { session.send(reply); });
}

void SessionTable::on_scanned_line(ClientTransport& session, const std::string& name,
                                   std::string_view line, const wire::Envelope& envelope) {
    const SessionId sid = session.id();
    if (batches_.waiting(sid)) {
        // Lines wait behind a batch by text: this one goes the way of any other.
        std::string copy;
        copy.reserve(line.size() + wire::kScanPadding);
        copy.assign(line);
        on_line(session, name, wire::PaddedText{copy});
        return;
    }
    ManagedServer* target = placement_.server_of(sid, name);
    if (target == nullptr) return;
    target->router().on_session_line(sid, line, envelope);
}

void SessionTable::on_group_line(ClientTransport& session, GroupSession& group, wire::PaddedText line) {
    GroupRouter& router = group.router();
    const SessionId sid = session.id();
    // A group session of 2025-03-26 takes batches as a plain session does: each message goes
    // to the group as a line of its own, and the group's answers leave in one array.
    const bool batches = looks_like_batch(line.text) && router.protocol() == kBatchProtocol;
    if (!batches && !batches_.waiting(sid)) {
        router.on_client_line(line.text);
        return;
    }
    batches_.on_line(
        sid, line, batches, [&router](wire::PaddedText one) { router.on_client_line(one.text); },
        [&session](std::string_view reply) { session.send(reply); });
}

void SessionTable::end(SessionId id, const std::string& reason, bool by_client) {
    const auto it = sessions_.find(id);
    if (it != sessions_.end()) it->second.session->close(reason, by_client);
}

void SessionTable::on_closed(ClientTransport& session, const std::string& reason, bool by_client) {
    const SessionId id = session.id();
    log::info(session.server(), "session " + std::to_string(id) + " ended: " + reason);
    // Detach on the next turn: this may run from inside the router's own loops.
    loop_.defer([this, id, reason, by_client] { remove(id, reason, by_client); });
}

void SessionTable::remove(SessionId id, const std::string& reason, bool by_client) {
    const auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    const std::string server_name = it->second.session->server();
    if (ControlConnection* link = it->second.link) {
        link->send(control::ended_message({reason, by_client}));
        link->close_after_flush();
    }
    std::unique_ptr<GroupSession> group = std::move(it->second.group);
    sessions_.erase(it);
    if (group) {
        batches_.forget(id);
        for (const GroupSession::Member& member : group->members()) {
            members_.erase(member.id);
            leave_server(member.id, member.server);
        }
        return;
    }
    leave_server(id, server_name);
}

void SessionTable::leave_server(SessionId id, const std::string& server_name) {
    batches_.forget(id);
    // A private process goes with its session, through the stop ladder; a project's child
    // with its last session (or at its idle_timeout); a legacy process with its last client.
    placement_.session_left(id, server_name);
}

void SessionTable::close_sessions_of(const std::string& server, const std::string& reason) {
    for (auto& [id, entry] : sessions_) {
        if (entry.group) {
            // The group goes on without that member.
            const auto& members = entry.group->members();
            for (std::size_t i = 0; i < members.size(); ++i) {
                if (members[i].server == server) entry.group->router().member_closed(i, reason);
            }
            continue;
        }
        if (entry.session->server() == server) entry.session->close(reason, false);
    }
}

void SessionTable::revoke_access() {
    for (auto& [id, entry] : sessions_) {
        ClientTransport& session = *entry.session;
        if (session.closed() || authority_.trusted(session.peer())) continue;
        if (entry.group) {
            for (const GroupSession::Member& member : entry.group->members()) {
                const ManagedServer* server = placement_.pool().find(member.server);
                if (server == nullptr || authority_.may_use(session.peer(), server->config())) continue;
                session.close("a reload removed uid " + std::to_string(session.peer().uid) +
                                  " from the allow_users/allow_groups of '" + member.server + "'",
                              false);
                break;
            }
            continue;
        }
        const ManagedServer* server = placement_.pool().find(session.server());
        if (server == nullptr || authority_.may_use(session.peer(), server->config())) continue;
        std::string why = "a reload removed uid ";
        why += std::to_string(session.peer().uid);
        why += " from the allow_users/allow_groups of '" + session.server() + "'";
        session.close(why, false);
    }
}

void SessionTable::apply_filters(const config::Registry& registry) {
    for (auto& [id, entry] : sessions_) {
        ClientTransport& session = *entry.session;
        if (session.closed()) continue;
        if (entry.group) {
            entry.group->refilter(registry);
            continue;
        }
        const config::ServerConfig* server = registry.find(session.server());
        if (server == nullptr || server->filters.empty()) continue;
        session.close("a reload gave '" + session.server() +
                          "' filters (tools, prompts or resources to show), which this session "
                          "was attached without; connect again to be served with them",
                      false);
    }
}

std::set<const ControlConnection*> SessionTable::links() const {
    std::set<const ControlConnection*> links;
    for (const auto& [id, entry] : sessions_) links.insert(entry.link);
    return links;
}

void SessionTable::send(SessionId session, std::string_view line) {
    send_spliced(session, std::span<const std::string_view>(&line, 1));
}

void SessionTable::send_spliced(SessionId session, std::span<const std::string_view> pieces) {
    std::size_t index = 0;
    if (GroupSession* group = group_of_member(session, index)) {
        group->router().on_member_line(index, wire::joined(pieces));
        return;
    }
    deliver(session, pieces);
}

void SessionTable::send_answer(SessionId session, std::span<const std::string_view> pieces,
                               const wire::Envelope& envelope, const wire::Replacements& changes) {
    std::size_t index = 0;
    if (GroupSession* group = group_of_member(session, index)) {
        group->router().on_member_answer(index, pieces, envelope, changes);
        return;
    }
    deliver(session, pieces, AnswerReading{&envelope, &changes});
}

void SessionTable::deliver(SessionId session, std::span<const std::string_view> pieces,
                           AnswerReading reading) {
    const Entry* entry = sessions_.lookup(session);
    if (entry == nullptr) return;
    ClientTransport& target = *entry->session;
    // An answer to a request of a batch waits for the others, and leaves in the batch's reply.
    const bool held =
        batches_.waiting(session) &&
        batches_.hold(session, pieces, [&target](std::string_view reply) { target.send(reply); });
    if (!held) {
        if (reading.envelope != nullptr)
            target.send_answer(pieces, *reading.envelope, *reading.changes);
        else
            target.send(pieces);
    }
    // The router forgets the request after sending its answer: check on the next turn.
    if (target.input_ended()) loop_.defer([this, session] { finish_if_answered(session); });
}

void SessionTable::close(SessionId session, const std::string& reason) {
    std::size_t index = 0;
    if (GroupSession* group = group_of_member(session, index)) {
        group->router().member_closed(index, reason);
        return;
    }
    end(session, reason, false);
}

void SessionTable::server_away(SessionId session, std::string_view reason) {
    std::size_t index = 0;
    if (GroupSession* group = group_of_member(session, index)) group->router().member_down(index, reason);
}

void SessionTable::server_back(SessionId session) {
    std::size_t index = 0;
    if (GroupSession* group = group_of_member(session, index)) group->router().member_up(index);
}

void SessionTable::finish_if_answered(SessionId id) {
    const auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    ClientTransport& session = *it->second.session;
    if (!session.input_ended() || session.closed()) return;
    if (it->second.group) {
        if (it->second.group->router().unanswered() == 0) session.finish("the client closed its input");
        return;
    }
    const ManagedServer* server = placement_.server_of(id, session.server());
    if (server != nullptr && server->router().has_session(id) &&
        server->router().unanswered(id) > 0)
        return;
    session.finish("the client closed its input");
}

void SessionTable::pause(ManagedServer& server, bool paused) {
    for (auto& [id, entry] : sessions_) {
        bool behind = placement_.server_of(id, entry.session->server()) == &server;
        if (entry.group) {
            // A group waits for the slowest of its members' servers.
            for (const GroupSession::Member& member : entry.group->members())
                behind = behind || placement_.server_of(member.id, member.server) == &server;
        }
        if (!behind) continue;
        if (paused) {
            entry.session->pause_input();
        } else {
            entry.session->resume_input();
        }
    }
}

}  // namespace mcpd
