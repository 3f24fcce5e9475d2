// SessionTable: client sessions carried across an upgrade in place (docs/UPGRADE.md). A session
// on the socket or with passed descriptors goes on as it was: its descriptors stay open across
// the exec, what was read from its client and not yet handed on is handed on by the new process,
// and what was queued for it and not yet written is written by the new process.
#include <fcntl.h>
#include <sys/stat.h>

#include "common/log.h"
#include "daemon/placement.h"
#include "daemon/session_table.h"

namespace mcpd {

namespace {

// A descriptor a session can be carried on: a pipe or a socket (a socket session's: a socket).
bool usable_descriptor(int fd, bool socket_only) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return false;
    return S_ISSOCK(st.st_mode) || (!socket_only && S_ISFIFO(st.st_mode));
}

void close_on_exec(int fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

}  // namespace

void SessionTable::upgrade_blockers(std::vector<std::string>& lasting,
                                    std::vector<std::string>& passing) const {
    std::size_t groups = 0, http = 0;
    for (const auto& [id, entry] : sessions_) {
        if (entry.group) {
            ++groups;
            continue;
        }
        const auto* stream = dynamic_cast<const StreamTransport*>(entry.session.get());
        if (stream == nullptr) {
            ++http;
            continue;
        }
        std::string why = stream->why_not_carried();
        if (why.empty() && stream->passed_fds() && entry.link == nullptr)
            why = "its mcpctl connect has gone";
        if (why.empty() && batches_.waiting(id)) why = "a batch of its is being answered";
        if (!why.empty())
            passing.push_back("session " + std::to_string(id) + " of " + stream->server() + ": " + why);
    }
    if (groups > 0)
        lasting.push_back(std::to_string(groups) +
                          " group session(s) are attached, which cannot be carried yet: upgrade "
                          "once they have ended (or restart mcpd, which ends them)");
    if (http > 0)
        lasting.push_back(std::to_string(http) +
                          " HTTP session(s) are open, which cannot be carried yet: upgrade once "
                          "they have ended (or restart mcpd, which ends them)");
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
        const auto* stream = dynamic_cast<const StreamTransport*>(entry.session.get());
        ManagedServer* server = placement_.server_of(id, entry.session->server());
        if (stream == nullptr || entry.group || server == nullptr) continue;  // refused before
        std::optional<routing::SessionState> state = server->router().carried_session(id);
        if (!state) continue;
        CarriedSession c;
        c.id = id;
        c.server = stream->server();
        c.passed_fds = stream->passed_fds();
        c.fd = stream->input_fd();
        c.output_fd = stream->output_fd();
        c.link_fd = entry.link != nullptr ? entry.link->fd() : -1;
        c.unread = stream->unread();
        c.unwritten = stream->unwritten();
        c.router = std::move(*state);
        if (const InstanceKey* key = placement_.route_of(id); key != nullptr && key->kind != InstanceKind::shared)
            c.instance = CarriedInstance{key->kind, key->qualifier, std::nullopt};
        if (const InstanceKey* modern = placement_.modern_route_of(id))
            c.modern.emplace(modern->kind, modern->qualifier);
        if (const Project* working = placement_.working_project_of(id)) c.working_project = *working;
        out.push_back(std::move(c));
    }
    return out;
}

Result<Done> SessionTable::adopt_carried(ManagedServer& server, const InstanceKey& key,
                                         const std::optional<InstanceKey>& modern,
                                         CarriedSession c, ControlConnection* link) {
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
    close_on_exec(input_fd.get());
    if (output_fd) close_on_exec(output_fd.get());
    event_base* base = loop_.base();
    BufferEvent input = BufferEvent::over(base, std::move(input_fd));
    BufferEvent output = c.passed_fds ? BufferEvent::over(base, std::move(output_fd)) : BufferEvent();
    if (input == nullptr || (c.passed_fds && output == nullptr))
        return permanent_failure(what + ": libevent could not allocate its buffers");
    auto session = std::make_unique<StreamTransport>(
        c.id, server.name(), *peer, std::move(input), std::move(output), loop_.writes(),
        settings_.max_message_bytes, settings_.max_session_queue_bytes, budget_);
    session->resume(c.unread, c.unwritten);
    ConnectionLimits::Slot slot = link == nullptr ? limits_.take(*peer) : ConnectionLimits::Slot();
    // Routed where it was, never placed anew (which would start a private process).
    placement_.restore_route(c.id, key, modern, std::move(c.working_project));
    open(server, std::move(session), std::move(slot), link, std::move(c.router));
    return Done{};
}

}  // namespace mcpd
