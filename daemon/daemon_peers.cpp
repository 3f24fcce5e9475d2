// Daemon: who may hold connections. A refused peer is answered and closed as soon as it is
// accepted; each user's connections are capped (connection_limits.h); a reload that takes a
// user's access away ends what that user holds.
#include <set>

#include "common/control_protocol.h"
#include "common/log.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"

namespace mcpd {

namespace {

std::string describe(const PeerCredentials& peer) {
    return "pid " + std::to_string(peer.pid) + " uid " + std::to_string(peer.uid);
}

}  // namespace

void Daemon::accept_connection(UniqueFd fd) {
    const std::optional<PeerCredentials> peer = peer_credentials(fd.get());
    if (!peer) {
        log::warning("dropped a control connection whose credentials could not be read");
        return;
    }
    auto connection = std::make_unique<ControlConnection>(
        loop_.base(), std::move(fd), *peer, *commands_, budget_, [this](ControlConnection& closed) {
            ControlConnection* key = &closed;
            loop_.defer([this, key] { connections_.erase(key); });
        });
    // A refused peer is answered now, without waiting for a request it may never send: its
    // descriptor is given back as soon as the answer is written.
    std::optional<ConnectionLimits::Slot> slot;
    std::string refusal;
    if (!authority_.may_connect(*peer, registry_)) {
        log::warning("refused a control connection from " + describe(*peer) +
                     ": not root, not mcpd's user, and not in any allow_users/allow_groups");
        connection->refuse(control::code::denied,
                           "permission denied: uid " + std::to_string(peer->uid) +
                               " may not use this mcpd (ask its owner to add you to allow_users)");
    } else if (slot = limits_.admit(*peer, refusal); !slot) {
        log::warning("refused a control connection from " + describe(*peer) + ": " + refusal);
        connection->refuse(control::code::limit, refusal);
    }
    ControlConnection* key = connection.get();
    connections_[key] =
        Connection{std::move(connection), slot ? std::move(*slot) : ConnectionLimits::Slot()};
}

void Daemon::revoke_access() {
    sessions_.revoke_access();
    // A user left with no server at all loses its control connections too (a `logs -f`);
    // the link of an `mcpctl connect` goes with its session, which says why.
    const std::set<const ControlConnection*> links = sessions_.links();
    for (auto& [key, entry] : connections_) {
        ControlConnection& connection = *entry.connection;
        if (connection.closed() || links.contains(&connection) ||
            authority_.may_connect(connection.peer(), registry_))
            continue;
        log::info("closing the control connection of " + describe(connection.peer()) +
                  ": a reload removed its uid from every allow_users/allow_groups");
        connection.refuse(control::code::denied,
                          "permission denied: uid " + std::to_string(connection.peer().uid) +
                              " may no longer use this mcpd (a reload removed it from every "
                              "allow_users/allow_groups)");
    }
    // One that may still use another server keeps its connection, but not the logs of this one.
    if (commands_) commands_->revoke_followers();
}

}  // namespace mcpd
