// Who may use which server: allow_users and allow_groups against a peer's credentials.
#include <catch2/catch.hpp>

#include "daemon/control/peer_auth.h"

using namespace mcpd;

namespace {

PeerCredentials peer(uid_t uid, gid_t gid, std::vector<gid_t> groups) {
    PeerCredentials p{100, uid, gid};
    p.groups = std::move(groups);
    p.groups_known = true;
    return p;
}

config::ServerConfig server_allowing(std::vector<std::string> users,
                                     std::vector<std::string> groups) {
    config::ServerConfig s;
    s.name = "x";
    s.allow_users = std::move(users);
    s.allow_groups = std::move(groups);
    return s;
}

}  // namespace

TEST_CASE("peer authorization: root and the owner may do anything, others only what they are allowed") {
    CHECK(is_privileged_peer(peer(0, 0, {}), 1000));
    CHECK(is_privileged_peer(peer(1000, 1000, {}), 1000));
    CHECK_FALSE(is_privileged_peer(peer(1001, 1001, {}), 1000));

    // By uid, as a number or a name.
    CHECK(peer_allowed_for(peer(61001, 61001, {}), server_allowing({"61001"}, {})));
    CHECK(peer_allowed_for(peer(0, 0, {}), server_allowing({"root"}, {})));
    CHECK_FALSE(peer_allowed_for(peer(61002, 61002, {}), server_allowing({"61001"}, {})));
    CHECK_FALSE(
        peer_allowed_for(peer(61002, 61002, {}), server_allowing({"no-such-user-here"}, {})));

    // By group: the primary group or one the process holds, by number or name.
    CHECK(peer_allowed_for(peer(61003, 61003, {}), server_allowing({}, {"61003"})));
    CHECK(peer_allowed_for(peer(61003, 61003, {65534}), server_allowing({}, {"nogroup"})));
    CHECK(peer_allowed_for(peer(61003, 61003, {4242}), server_allowing({}, {"4242"})));
    CHECK_FALSE(peer_allowed_for(peer(61003, 61003, {4242}), server_allowing({}, {"4243"})));
    CHECK_FALSE(
        peer_allowed_for(peer(61003, 61003, {}), server_allowing({}, {"no-such-group-here"})));
}

TEST_CASE("peer authorization: a peer may connect when one server allows it") {
    config::Registry registry;
    registry.servers = {server_allowing({}, {}), server_allowing({"61004"}, {})};
    CHECK(peer_may_connect(peer(61004, 61004, {}), registry, 1000));
    CHECK_FALSE(peer_may_connect(peer(61005, 61005, {}), registry, 1000));
    CHECK(peer_may_connect(peer(1000, 1000, {}), registry, 1000));
}

TEST_CASE("peer authorization: privilege is root or the owner, never a group", "[peer_auth]") {
    CHECK(is_privileged_peer(peer(0, 0, {}), 0));
    CHECK_FALSE(is_privileged_peer(peer(1000, 0, {0}), 0));  // root's group is not root
    CHECK(is_privileged_peer(peer(0, 1000, {}), 1000));      // root, whoever owns mcpd
}

TEST_CASE("peer authorization: the allow lists alone decide peer_allowed_for", "[peer_auth]") {
    // Root is trusted through is_privileged_peer, not through a server's lists.
    CHECK_FALSE(peer_allowed_for(peer(0, 0, {}), server_allowing({}, {})));
    CHECK_FALSE(peer_allowed_for(peer(61001, 61001, {}), server_allowing({}, {})));
    // A list with several entries: any one of them.
    CHECK(peer_allowed_for(peer(61002, 61002, {}), server_allowing({"61001", "61002"}, {})));
    CHECK(
        peer_allowed_for(peer(61002, 61002, {4242}), server_allowing({"61001"}, {"4241", "4242"})));
    // A group given as a number the group database does not list still matches a process's.
    CHECK(peer_allowed_for(peer(61003, 61003, {61999}), server_allowing({}, {"61999"})));
    // Neither a user nor a group list matches on the other's number.
    CHECK_FALSE(peer_allowed_for(peer(61004, 61005, {}), server_allowing({"61005"}, {"61004"})));
}

TEST_CASE("peer authorization: without SO_PEERGROUPS the group database stands in", "[peer_auth]") {
    PeerCredentials unknown{100, 61006, 4242};  // groups_known false: a kernel that cannot say
    // A uid the user database does not know keeps only its primary group.
    CHECK(peer_allowed_for(unknown, server_allowing({}, {"4242"})));
    CHECK_FALSE(peer_allowed_for(unknown, server_allowing({}, {"4243"})));
    // Root is in the database everywhere, with group 0.
    PeerCredentials root{100, 0, 0};
    CHECK(peer_allowed_for(root, server_allowing({}, {"0"})));
}

TEST_CASE("peer authorization: an empty registry admits only root and the owner", "[peer_auth]") {
    const config::Registry empty;
    CHECK(peer_may_connect(peer(0, 0, {}), empty, 1000));
    CHECK(peer_may_connect(peer(1000, 1000, {}), empty, 1000));
    CHECK_FALSE(peer_may_connect(peer(61004, 61004, {}), empty, 1000));
    // Allowed by group on one server of several.
    config::Registry registry;
    registry.servers = {server_allowing({"61001"}, {}), server_allowing({}, {"4242"})};
    CHECK(peer_may_connect(peer(61008, 61008, {4242}), registry, 1000));
    CHECK_FALSE(peer_may_connect(peer(61008, 61008, {4243}), registry, 1000));
}
