// The HTTP front door across an upgrade in place (docs/UPGRADE.md): its connections go on on
// their descriptors, with what was read and not yet taken and what was written and not yet
// sent, and each session's transport goes on with its exchanges, streams and replay buffer.
// Who a session acts as is never read from the state: it is the user of the session's signed
// token, verified with the front door's key.
#include <pwd.h>

#include "common/descriptors.h"
#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/http_front.h"

namespace mcpd {

namespace {

}  // namespace

void HttpFront::hold_input(bool held) {
    for (auto& listener : listeners_) {
        if (held) listener->watcher.disable();
        else listener->watcher.enable();
    }
    for (auto& [id, client] : clients_)
        if (client.connection != nullptr) client.connection->hold_input(held);
}

void HttpFront::hold_output(bool held) {
    for (auto& [id, client] : clients_)
        if (client.connection != nullptr) client.connection->hold_output(held);
}

void HttpFront::upgrade_blockers(std::vector<std::string>& passing) const {
    // Its id is made from the initialize's answer, from what the client declared: short, and
    // waited out rather than carried.
    std::size_t initializing = 0;
    for (const auto& [id, transport] : pending_) initializing += transport->initializing() ? 1 : 0;
    if (initializing > 0)
        passing.push_back(std::to_string(initializing) + " HTTP session(s) being initialized");
}

CarriedHttpFront HttpFront::carried() const {
    CarriedHttpFront out;
    out.next_client = next_client_;
    out.serial = serial_;
    out.deleted.assign(deleted_.begin(), deleted_.end());
    for (const auto& [id, client] : clients_) {
        const HttpConnection* connection = client.connection.get();
        if (connection == nullptr || connection->closed() || connection->fd() < 0) continue;
        CarriedHttpConnection c = connection->carried();
        c.listener = client.listener;
        out.connections.push_back(std::move(c));
    }
    return out;
}

std::string HttpFront::carried_token(SessionId id, const std::string& session_id) const {
    if (!session_id.empty()) return session_id;
    const auto it = pending_.find(id);
    if (it == pending_.end() || !signer_) return {};
    // A 2026-07-28 request's session has no id of its own: claims are signed for it, so that
    // the new process takes its user from a signature, not from the state.
    HttpSessionClaims claims;
    claims.target = it->second->server();
    claims.uid = it->second->peer().uid;
    claims.protocol_version = it->second->protocol();
    return signer_->sign(claims);
}

void HttpFront::take_carried(const CarriedHttpFront& front) {
    next_client_ = std::max(next_client_, front.next_client);
    serial_ = front.serial;
    deleted_.insert(front.deleted.begin(), front.deleted.end());
    for (const CarriedHttpConnection& c : front.connections) {
        UniqueFd fd(c.fd);
        set_close_on_exec(fd.get());
        const Listener* listener = nullptr;
        for (const auto& l : listeners_)
            if (l->configured == c.listener) listener = l.get();
        if (listener == nullptr || !is_socket(fd.get()) || clients_.contains(c.id) || c.id >= next_client_) {
            log::warning("upgrade in place: an HTTP connection could not be carried; it is closed");
            continue;
        }
        Client client;
        client.unix_socket = listener->unix_socket;
        client.policy = listener->policy;
        client.listener = listener->configured;
        if (listener->unix_socket) {
            // Who is at the other end is read again, and checked as at accept.
            client.peer = peer_credentials(fd.get());
            if (!client.peer || !daemon_.authority().may_connect(*client.peer, daemon_.registry())) {
                log::warning("upgrade in place: an HTTP connection's peer may not connect now; it is closed");
                continue;
            }
        }
        BufferEvent bev = BufferEvent::over(daemon_.loop().base(), std::move(fd));
        if (!bev) continue;
        add_client(c.id, std::move(client), std::move(bev));
        clients_.at(c.id).connection->resume(c);
    }
}

Result<std::unique_ptr<HttpTransport>> HttpFront::adopt_session(SessionId id, const std::string& target,
                                                                 const CarriedHttpSession& carried) {
    const std::string what = "HTTP session " + std::to_string(id) + " of " + target;
    if (Result<Done> ready = ready_state(); !ready)
        return permanent_failure(what + ": " + ready.error());
    const Result<HttpSessionClaims> claims = signer_->verify(carried.token);
    if (!claims) return permanent_failure(what + ": its token is refused: " + claims.error());
    if (claims->target != target || (!carried.session_id.empty() && carried.token != carried.session_id))
        return permanent_failure(what + ": its token is another session's");
    PeerCredentials peer;
    peer.uid = claims->uid;
    peer.gid = claims->uid;
    if (const passwd* pw = ::getpwuid(claims->uid)) peer.gid = pw->pw_gid;
    if (!daemon_.authority().may_connect(peer, daemon_.registry()))
        return permanent_failure(what + ": uid " + std::to_string(claims->uid) + " may not use this mcpd now");
    std::unique_ptr<HttpTransport> transport =
        make_transport(id, target, peer, claims->client_capabilities, claims->client_info);
    transport->restore(carried);
    if (carried.session_id.empty()) pending_[id] = transport.get();
    else transports_[carried.session_id] = transport.get();
    return transport;
}

void HttpFront::close_orphans() {
    std::vector<HttpConnection*> orphans;
    for (auto& [id, client] : clients_) {
        HttpConnection* connection = client.connection.get();
        if (connection == nullptr || connection->closed() || !connection->answering()) continue;
        bool used = false;
        for (const auto& [key, transport] : transports_) used = used || transport->uses(id);
        for (const auto& [key, transport] : pending_) used = used || transport->uses(id);
        if (!used) orphans.push_back(connection);
    }
    for (HttpConnection* connection : orphans) connection->close();
}

}  // namespace mcpd
