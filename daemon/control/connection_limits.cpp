#include "daemon/control/connection_limits.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace mcpd {

ConnectionLimits::Slot::Slot(Slot&& other) noexcept
    : limits_(std::exchange(other.limits_, nullptr)),
      uid_(other.uid_),
      privileged_(other.privileged_) {}

ConnectionLimits::Slot& ConnectionLimits::Slot::operator=(Slot&& other) noexcept {
    if (this != &other) {
        release();
        limits_ = std::exchange(other.limits_, nullptr);
        uid_ = other.uid_;
        privileged_ = other.privileged_;
    }
    return *this;
}

ConnectionLimits::Slot::~Slot() {
    release();
}

void ConnectionLimits::Slot::release() {
    if (limits_ != nullptr) std::exchange(limits_, nullptr)->release(uid_, privileged_);
}

ConnectionLimits::ConnectionLimits(uid_t owner, std::size_t descriptor_limit, std::size_t owner_cap)
    : owner_(owner), owner_cap_(owner_cap) {
    set_descriptor_limit(descriptor_limit);
}

void ConnectionLimits::set_descriptor_limit(std::size_t descriptor_limit) {
    unprivileged_cap_ =
        descriptor_limit == 0
            ? std::numeric_limits<std::size_t>::max()
            : std::max(kMaxConnectionsPerUser, descriptor_limit / kUnprivilegedShareDivisor);
}

std::optional<ConnectionLimits::Slot> ConnectionLimits::admit(const PeerCredentials& peer,
                                                              std::string& refusal) {
    if (is_privileged_peer(peer, owner_)) {
        if (held(peer.uid) < owner_cap_) return grant(peer, true);
        refusal = "too many connections: uid " + std::to_string(peer.uid) + " already holds " +
                  std::to_string(held(peer.uid)) +
                  " control connections and sessions, none of them an idle control "
                  "connection mcpd could close to make way, and max_owner_connections is " +
                  std::to_string(owner_cap_) + "; end some sessions or raise it in [daemon]";
        return std::nullopt;
    }
    if (held(peer.uid) >= kMaxConnectionsPerUser) {
        refusal = "too many connections: uid " + std::to_string(peer.uid) + " already holds " +
                  std::to_string(kMaxConnectionsPerUser) +
                  " control connections and sessions, the most mcpd allows one user; close "
                  "some and try again";
        return std::nullopt;
    }
    if (unprivileged_ >= unprivileged_cap_) {
        refusal = "too many connections: users other than root and mcpd's own hold " +
                  std::to_string(unprivileged_cap_) +
                  " control connections and sessions together, the most mcpd allows them; "
                  "try again later";
        return std::nullopt;
    }
    return grant(peer, false);
}

ConnectionLimits::Slot ConnectionLimits::take(const PeerCredentials& peer) {
    return grant(peer, is_privileged_peer(peer, owner_));
}

std::size_t ConnectionLimits::room_needed(const PeerCredentials& peer) const {
    if (!is_privileged_peer(peer, owner_)) return 0;
    const std::size_t now = held(peer.uid);
    return now < owner_cap_ ? 0 : now - owner_cap_ + 1;
}

std::size_t ConnectionLimits::held(uid_t uid) const {
    const auto it = held_.find(uid);
    return it == held_.end() ? 0 : it->second;
}

ConnectionLimits::Slot ConnectionLimits::grant(const PeerCredentials& peer, bool privileged) {
    ++held_[peer.uid];
    if (!privileged) ++unprivileged_;
    return Slot(this, peer.uid, privileged);
}

void ConnectionLimits::release(uid_t uid, bool privileged) {
    const auto it = held_.find(uid);
    if (it != held_.end() && --it->second == 0) held_.erase(it);
    if (!privileged && unprivileged_ > 0) --unprivileged_;
}

}  // namespace mcpd
