// Daemon: who may hold connections. A refused peer is answered and closed as soon as it is
// accepted; each user's connections are capped (connection_limits.h), root's and mcpd's own
// user's by closing their oldest idle control connections to make way; a full descriptor table
// makes the oldest idle control connections of anybody go; a reload that takes a user's access
// away ends what that user holds.
#include <algorithm>
#include <set>
#include <vector>

#include "common/control_protocol.h"
#include "common/descriptors.h"
#include "common/log.h"
#include "daemon/control/socket_reach.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"

namespace mcpd {

namespace {

std::string describe(const PeerCredentials& peer) {
    return "pid " + std::to_string(peer.pid) + " uid " + std::to_string(peer.uid);
}

// A uid that make_way() logged is logged again only after this long without closing one of its
// connections.
constexpr Duration kMakeWayQuiet = std::chrono::seconds(60);

}  // namespace

std::size_t Daemon::make_way(std::size_t count, std::optional<uid_t> uid, const std::string& why) {
    std::vector<Connection*> idle;
    for (auto& [key, entry] : connections_) {
        if (entry.connection->idle_and_silent() && (!uid || entry.connection->peer().uid == *uid))
            idle.push_back(&entry);
    }
    count = std::min(count, idle.size());
    std::partial_sort(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(count), idle.end(),
                      [](const Connection* a, const Connection* b) {
                          return a->connection->idle_since() < b->connection->idle_since();
                      });
    const TimePoint now = Clock::now();
    std::map<uid_t, std::size_t> closed;
    for (std::size_t i = 0; i < count; ++i) {
        ++closed[idle[i]->connection->peer().uid];
        idle[i]->connection->close_to_make_way(why);
        idle[i]->slot = ConnectionLimits::Slot();  // free for the one it made way for
    }
    for (const auto& [closed_uid, n] : closed) {
        const auto last = made_way_.find(closed_uid);
        const bool quiet = last == made_way_.end() || now - last->second >= kMakeWayQuiet;
        made_way_[closed_uid] = now;
        if (!quiet) continue;
        log::warning("closing idle control connections of uid " + std::to_string(closed_uid) +
                     ", the longest idle first, to make way: " + why + " (" + std::to_string(n) +
                     " now; said once while it goes on)");
    }
    // Forget the quiet ones, so the map holds only uids making way now.
    std::erase_if(made_way_,
                  [now](const auto& entry) { return now - entry.second >= kMakeWayQuiet; });
    return count;
}

std::size_t Daemon::make_room_for_descriptors() {
    return make_way(kDescriptorReserve, std::nullopt,
                    "mcpd's descriptor table is full (" + std::to_string(max_descriptors_) +
                        " descriptors), and root and mcpd's own user must still get in");
}

std::unique_ptr<ControlConnection> Daemon::make_connection(UniqueFd fd, const PeerCredentials& peer) {
    return std::make_unique<ControlConnection>(
        loop_.base(), std::move(fd), peer, *commands_, budget_,
        registry_.daemon.control_idle_timeout, [this](ControlConnection& closed) {
            ControlConnection* key = &closed;
            // Its place is free at once (a connection may be waiting for it); the object goes
            // on the next turn, out of its own callbacks.
            if (const auto it = connections_.find(key); it != connections_.end())
                it->second.slot = ConnectionLimits::Slot();
            loop_.defer([this, key] { connections_.erase(key); });
        });
}

ControlConnection* Daemon::adopt_connection(UniqueFd fd) {
    if (!fd || !is_socket(fd.get())) return nullptr;
    // Who it is, read again from the socket, as at any connection.
    const std::optional<PeerCredentials> peer = peer_credentials(fd.get());
    if (!peer) return nullptr;
    set_close_on_exec(fd.get());
    std::unique_ptr<ControlConnection> connection = make_connection(std::move(fd), *peer);
    ControlConnection* key = connection.get();
    connections_[key] = Connection{std::move(connection), limits_.take(*peer)};
    return key;
}

void Daemon::accept_connection(UniqueFd fd, bool short_of_descriptors) {
    const std::optional<PeerCredentials> peer = peer_credentials(fd.get());
    if (!peer) {
        log::warning("dropped a control connection whose credentials could not be read");
        return;
    }
    std::unique_ptr<ControlConnection> connection = make_connection(std::move(fd), *peer);
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
    } else if (short_of_descriptors && !authority_.trusted(*peer)) {
        refusal =
            "too many connections: mcpd is short of file descriptors and keeps the last "
            "few for root and its own user; try again later";
        log::warning("refused a control connection from " + describe(*peer) + ": " + refusal);
        connection->refuse(control::code::limit, refusal);
    } else {
        // Root or mcpd's own user at its cap: its oldest idle control connections make way.
        if (const std::size_t room = limits_.room_needed(*peer); room > 0)
            make_way(room, peer->uid,
                     "uid " + std::to_string(peer->uid) + " holds " +
                         std::to_string(limits_.held(peer->uid)) +
                         " control connections and sessions, the most max_owner_connections "
                         "lets it hold");
        if (slot = limits_.admit(*peer, refusal); !slot) {
            log::warning("refused a control connection from " + describe(*peer) + ": " + refusal);
            connection->refuse(control::code::limit, refusal);
        }
    }
    ControlConnection* key = connection.get();
    connections_[key] =
        Connection{std::move(connection), slot ? std::move(*slot) : ConnectionLimits::Slot()};
}

void Daemon::warn_unreachable_peers() const {
    if (listening_path_.empty()) return;  // an abstract socket: no file permissions apply
    const std::string warning =
        unreachable_warning(unreachable_peers(registry_, listening_path_, options_.socket_access,
                                              options_.socket_is_default, SocketState::bound),
                            listening_path_);
    if (!warning.empty()) log::warning(warning);
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
