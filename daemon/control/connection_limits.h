// How many connections each user may hold, so that no user can use up mcpd's file
// descriptors (and with them root's and mcpd's own user's way in).
//
// A connection is a control connection or an MCP session; an `mcpctl connect` counts once
// (its session lives on its control connection's place). Root and mcpd's own user are held to
// a cap of their own (max_owner_connections, a runaway script of theirs must not fill the
// descriptor table either), but `mcpctl status` must always reach mcpd: when one of them is
// at its cap, the daemon closes that uid's oldest idle control connection to make way
// (room_needed() says how many) before admit() refuses anything.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "daemon/control/peer_auth.h"

namespace mcpd {

// One user other than root and mcpd's own: its control connections and sessions together.
inline constexpr std::size_t kMaxConnectionsPerUser = 64;
// Every user other than root and mcpd's own together: at most 1/kUnprivilegedShareDivisor of
// mcpd's descriptor limit (but never below one user's cap), so that the rest stays for the
// servers' pipes and for root and mcpd's user however many users join in.
inline constexpr std::size_t kUnprivilegedShareDivisor = 2;

class ConnectionLimits {
public:
    // A place held by one connection; given back when destroyed. Movable, not copyable.
    class Slot {
    public:
        Slot() = default;
        Slot(Slot&& other) noexcept;
        Slot& operator=(Slot&& other) noexcept;
        ~Slot();
        Slot(const Slot&) = delete;
        Slot& operator=(const Slot&) = delete;

    private:
        friend class ConnectionLimits;
        Slot(ConnectionLimits* limits, uid_t uid, bool privileged)
            : limits_(limits), uid_(uid), privileged_(privileged) {}
        void release();

        ConnectionLimits* limits_ = nullptr;
        uid_t uid_ = 0;
        bool privileged_ = false;
    };

    // `descriptor_limit`: mcpd's RLIMIT_NOFILE (0: no share limit for unprivileged users).
    // `owner_cap`: the places root and mcpd's own user may each hold.
    ConnectionLimits(uid_t owner, std::size_t descriptor_limit, std::size_t owner_cap);
    ConnectionLimits(const ConnectionLimits&) = delete;
    ConnectionLimits& operator=(const ConnectionLimits&) = delete;

    void set_descriptor_limit(std::size_t descriptor_limit);
    void set_owner_cap(std::size_t owner_cap) { owner_cap_ = owner_cap; }
    std::size_t owner_cap() const { return owner_cap_; }

    // How many of its places `peer` must give back before admit() lets it in: for root and
    // mcpd's own user at (or, after a lowered cap, over) their cap, what takes them under it;
    // 0 for everybody else, whose excess is refused.
    std::size_t room_needed(const PeerCredentials& peer) const;

    // A place for one more connection of `peer`; nullopt, with `refusal` set to a sentence
    // saying which limit, when it would go over one.
    std::optional<Slot> admit(const PeerCredentials& peer, std::string& refusal);
    // A place that is never refused: a session taking over its connection's place.
    Slot take(const PeerCredentials& peer);

    // How many places `uid` holds.
    std::size_t held(uid_t uid) const;
    // How many places users other than root and mcpd's own hold together.
    std::size_t unprivileged_total() const { return unprivileged_; }
    // The most those users may hold together.
    std::size_t unprivileged_cap() const { return unprivileged_cap_; }

private:
    Slot grant(const PeerCredentials& peer, bool privileged);
    void release(uid_t uid, bool privileged);

    uid_t owner_;
    std::size_t unprivileged_cap_ = 0;
    std::size_t owner_cap_ = 0;
    std::map<uid_t, std::size_t> held_;
    std::size_t unprivileged_ = 0;
};

}  // namespace mcpd
