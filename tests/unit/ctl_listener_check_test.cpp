// Who mcpctl accepts behind the socket before it sends anything.
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/socket_location.h"
#include "ctl/listener_check.h"

using mcpctl::distrust;
using mcpctl::ListenerPolicy;
using mcpctl::listener_policy;

TEST_CASE("mcpctl trusts its own user and root behind the socket, nobody else") {
    const ListenerPolicy policy{1000, std::nullopt, std::nullopt};
    CHECK_FALSE(distrust(1000, policy, "/tmp/mcpd-1000/mcpd.sock"));
    CHECK_FALSE(distrust(0, policy, "/tmp/mcpd-1000/mcpd.sock"));
    const auto refusal = distrust(1001, policy, "/tmp/mcpd-1000/mcpd.sock");
    REQUIRE(refusal);
    // The sentence names both uids, the socket, and the way out.
    CHECK(refusal->find("uid 1001") != std::string::npos);
    CHECK(refusal->find("uid 1000") != std::string::npos);
    CHECK(refusal->find("/tmp/mcpd-1000/mcpd.sock") != std::string::npos);
    CHECK(refusal->find("MCPD_SOCKET_OWNER=1001") != std::string::npos);
}

TEST_CASE("the system service's user and a named owner are trusted too") {
    const ListenerPolicy policy{1000, 999, 1234};
    CHECK_FALSE(distrust(999, policy, "/run/mcpd/mcpd.sock"));
    CHECK_FALSE(distrust(1234, policy, "/srv/shared.sock"));
    CHECK(distrust(4321, policy, "/srv/shared.sock"));
}

TEST_CASE("MCPD_SOCKET_OWNER is a user name or a uid, the service user only on the system socket") {
    mcpd::Result<ListenerPolicy> policy = listener_policy("/tmp/x.sock", "4242");
    REQUIRE(policy.ok());
    CHECK(policy->self == ::getuid());
    CHECK(policy->named_owner == uid_t{4242});
    CHECK_FALSE(policy->service_user);
    policy = listener_policy("/tmp/x.sock", "root");
    REQUIRE(policy.ok());
    CHECK(policy->named_owner == uid_t{0});
    policy = listener_policy("/tmp/x.sock", nullptr);
    REQUIRE(policy.ok());
    CHECK_FALSE(policy->named_owner);
    policy = listener_policy("/tmp/x.sock", "no-such-user-here");
    CHECK_FALSE(policy.ok());
    CHECK(policy.error().find("MCPD_SOCKET_OWNER names no user") != std::string::npos);
}
