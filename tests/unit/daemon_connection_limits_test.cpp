#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "daemon/control/connection_limits.h"

using mcpd::ConnectionLimits;
using mcpd::kMaxConnectionsPerUser;
using mcpd::PeerCredentials;

namespace {

constexpr uid_t kOwner = 1000;
constexpr std::size_t kOwnerCap = 512;

PeerCredentials user(uid_t uid) {
    return PeerCredentials{4242, uid, uid};
}

// Admit `n` connections of `uid`, keeping their slots in `held`; returns how many got in.
std::size_t admit(ConnectionLimits& limits, uid_t uid, std::size_t n,
                  std::vector<ConnectionLimits::Slot>& held) {
    std::size_t in = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::string refusal;
        std::optional<ConnectionLimits::Slot> slot = limits.admit(user(uid), refusal);
        if (!slot) continue;
        held.push_back(std::move(*slot));
        ++in;
    }
    return in;
}

}  // namespace

TEST_CASE("a user other than root and mcpd's own gets kMaxConnectionsPerUser places") {
    ConnectionLimits limits(kOwner, 1024, kOwnerCap);
    std::vector<ConnectionLimits::Slot> held;
    CHECK(admit(limits, 2000, kMaxConnectionsPerUser, held) == kMaxConnectionsPerUser);
    std::string refusal;
    CHECK_FALSE(limits.admit(user(2000), refusal));
    CHECK(refusal.find("uid 2000 already holds 64") != std::string::npos);
    // Another user is not held back by the first one.
    CHECK(admit(limits, 2001, 1, held) == 1);
    CHECK(limits.held(2000) == kMaxConnectionsPerUser);
    CHECK(limits.held(2001) == 1);
}

TEST_CASE("a place comes back when its slot goes, moved or not") {
    ConnectionLimits limits(kOwner, 1024, kOwnerCap);
    std::vector<ConnectionLimits::Slot> held;
    admit(limits, 2000, kMaxConnectionsPerUser, held);
    ConnectionLimits::Slot moved = std::move(held.back());
    held.pop_back();
    CHECK(limits.held(2000) == kMaxConnectionsPerUser);  // the moved-from slot gave nothing back
    std::string refusal;
    CHECK_FALSE(limits.admit(user(2000), refusal));
    moved = ConnectionLimits::Slot();
    CHECK(limits.held(2000) == kMaxConnectionsPerUser - 1);
    CHECK(admit(limits, 2000, 1, held) == 1);
    held.clear();
    CHECK(limits.held(2000) == 0);
    CHECK(limits.unprivileged_total() == 0);
}

TEST_CASE("root and mcpd's own user each have a cap of their own, apart from the others' share") {
    ConnectionLimits limits(kOwner, 256, kOwnerCap);
    std::vector<ConnectionLimits::Slot> held;
    CHECK(admit(limits, 0, 5000, held) == kOwnerCap);
    CHECK(admit(limits, kOwner, 5000, held) == kOwnerCap);
    CHECK(limits.unprivileged_total() == 0);
    // Nor do they use up the other users' share.
    CHECK(admit(limits, 2000, kMaxConnectionsPerUser, held) == kMaxConnectionsPerUser);

    // Over it, the refusal names the key to raise; room is what makes way first.
    std::string refusal;
    CHECK_FALSE(limits.admit(user(kOwner), refusal));
    CHECK(refusal.find("uid 1000 already holds 512") != std::string::npos);
    CHECK(refusal.find("max_owner_connections") != std::string::npos);
}

TEST_CASE("room_needed() says how many places root or mcpd's user must give back") {
    ConnectionLimits limits(kOwner, 1024, 3);
    std::vector<ConnectionLimits::Slot> held;
    CHECK(limits.room_needed(user(kOwner)) == 0);
    admit(limits, kOwner, 3, held);
    CHECK(limits.room_needed(user(kOwner)) == 1);
    CHECK(limits.room_needed(user(0)) == 0);  // root's places are its own
    // Other users are refused at their cap, never made way for.
    admit(limits, 2000, kMaxConnectionsPerUser, held);
    CHECK(limits.room_needed(user(2000)) == 0);

    SECTION("one place given back lets one more in") {
        held.erase(held.begin());
        std::string refusal;
        CHECK(limits.admit(user(kOwner), refusal));
    }
    SECTION("a lowered cap asks for every place over it, and one") {
        limits.set_owner_cap(1);
        CHECK(limits.room_needed(user(kOwner)) == 3);
    }
}

TEST_CASE("users other than root and mcpd's own share half the descriptor limit") {
    ConnectionLimits limits(kOwner, 1024, kOwnerCap);
    CHECK(limits.unprivileged_cap() == 512);
    std::vector<ConnectionLimits::Slot> held;
    std::size_t in = 0;
    for (uid_t uid = 2000; uid < 2010; ++uid)
        in += admit(limits, uid, kMaxConnectionsPerUser, held);
    CHECK(in == 512);
    std::string refusal;
    CHECK_FALSE(limits.admit(user(2011), refusal));
    CHECK(refusal.find("users other than root and mcpd's own hold 512") != std::string::npos);
    CHECK(admit(limits, 0, 1, held) == 1);  // root still gets in

    SECTION("a low limit still leaves one user its own cap") {
        ConnectionLimits small(kOwner, 64, kOwnerCap);
        CHECK(small.unprivileged_cap() == kMaxConnectionsPerUser);
    }
    SECTION("no known limit: only the per-user cap") {
        ConnectionLimits unknown(kOwner, 0, kOwnerCap);
        std::vector<ConnectionLimits::Slot> many;
        std::size_t all = 0;
        for (uid_t uid = 3000; uid < 3020; ++uid) all += admit(unknown, uid, 100, many);
        CHECK(all == 20 * kMaxConnectionsPerUser);
    }
}

TEST_CASE("take() is never refused and counts like admit()") {
    ConnectionLimits limits(kOwner, 1024, kOwnerCap);
    std::vector<ConnectionLimits::Slot> held;
    admit(limits, 2000, kMaxConnectionsPerUser, held);
    ConnectionLimits::Slot extra = limits.take(user(2000));
    CHECK(limits.held(2000) == kMaxConnectionsPerUser + 1);
    CHECK(limits.unprivileged_total() == kMaxConnectionsPerUser + 1);
}
