// Who may use which server: allow_users and allow_groups against a peer's credentials.
#include <catch2/catch.hpp>

#include "daemon/peer_auth.h"

using namespace mcpd;

namespace {

PeerCredentials peer(uid_t uid, gid_t gid, std::vector<gid_t> groups) {
    PeerCredentials p{100, uid, gid};
    p.groups = std::move(groups);
    p.groups_known = true;
    return p;
}

config::ServerConfig server(std::vector<std::string> users, std::vector<std::string> groups) {
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
    CHECK(peer_allowed_for(peer(61001, 61001, {}), server({"61001"}, {})));
    CHECK(peer_allowed_for(peer(0, 0, {}), server({"root"}, {})));
    CHECK_FALSE(peer_allowed_for(peer(61002, 61002, {}), server({"61001"}, {})));
    CHECK_FALSE(peer_allowed_for(peer(61002, 61002, {}), server({"no-such-user-here"}, {})));

    // By group: the primary group or one the process holds, by number or name.
    CHECK(peer_allowed_for(peer(61003, 61003, {}), server({}, {"61003"})));
    CHECK(peer_allowed_for(peer(61003, 61003, {65534}), server({}, {"nogroup"})));
    CHECK(peer_allowed_for(peer(61003, 61003, {4242}), server({}, {"4242"})));
    CHECK_FALSE(peer_allowed_for(peer(61003, 61003, {4242}), server({}, {"4243"})));
    CHECK_FALSE(peer_allowed_for(peer(61003, 61003, {}), server({}, {"no-such-group-here"})));
}

TEST_CASE("peer authorization: a peer may connect when one server allows it") {
    config::Registry registry;
    registry.servers = {server({}, {}), server({"61004"}, {})};
    CHECK(peer_may_connect(peer(61004, 61004, {}), registry, 1000));
    CHECK_FALSE(peer_may_connect(peer(61005, 61005, {}), registry, 1000));
    CHECK(peer_may_connect(peer(1000, 1000, {}), registry, 1000));
}
