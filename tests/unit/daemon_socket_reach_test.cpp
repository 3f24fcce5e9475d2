// socket_reach: which allowed users and groups could not connect to the control socket, what
// stops each, and the one sentence that says so.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "config/registry.h"
#include "daemon/control/socket_reach.h"
#include "temp_dir.h"

using mcpd::SocketAccess;
using mcpd::SocketState;
using mcpd::unreachable_peers;
using mcpd::unreachable_warning;

namespace {

// A uid no account has: only the others' permission bits can apply to it.
constexpr const char* kStranger = "4242424";
// A group every Debian system has (gid 1).
constexpr const char* kDaemonGroup = "daemon";

mcpd::config::Registry allowing(std::vector<std::string> users, std::vector<std::string> groups) {
    mcpd::config::Registry registry;
    mcpd::config::ServerConfig server;
    server.name = "demo";
    server.command = "x";
    server.allow_users = std::move(users);
    server.allow_groups = std::move(groups);
    registry.servers.push_back(server);
    server.name = "notes";
    registry.servers.push_back(server);
    return registry;
}

bool reach_text_has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a private socket keeps out every allowed user, each named once", "[socket_reach]") {
    TempDir tmp("mcpd-reach");
    const std::string dir = tmp.path("");
    REQUIRE(::chmod(dir.c_str(), 0711) == 0);
    const std::string socket = tmp.path("mcpd.sock");
    const auto peers = unreachable_peers(allowing({kStranger}, {}), socket, SocketAccess{0600, {}},
                                         false, SocketState::planned);
    REQUIRE(peers.size() == 1);
    CHECK(peers[0].who == "uid 4242424");
    CHECK(peers[0].servers == "demo, notes");
    CHECK(reach_text_has(peers[0].blocked, "cannot write to the socket (mode 0600"));

    const std::string warning = unreachable_warning(peers, socket);
    CHECK(reach_text_has(warning, "cannot reach the socket " + socket));
    CHECK(reach_text_has(warning, "uid 4242424 (demo, notes) cannot write to the socket"));
    CHECK(reach_text_has(warning, "Set [daemon] socket_group to a group they are in"));
    CHECK_FALSE(reach_text_has(warning, "[daemon] socket to a path"));
}

TEST_CASE("a socket every class may write to, in searchable directories, keeps nobody out",
          "[socket_reach]") {
    TempDir tmp("mcpd-reach");
    REQUIRE(::chmod(tmp.path("").c_str(), 0711) == 0);
    const auto peers =
        unreachable_peers(allowing({kStranger}, {kDaemonGroup}), tmp.path("mcpd.sock"),
                          SocketAccess{0666, {}}, false, SocketState::planned);
    CHECK(peers.empty());
    CHECK(unreachable_warning(peers, tmp.path("mcpd.sock")).empty());
}

TEST_CASE("the socket's group lets its members in, and nobody else", "[socket_reach]") {
    TempDir tmp("mcpd-reach");
    REQUIRE(::chmod(tmp.path("").c_str(), 0711) == 0);
    const SocketAccess group_socket{0660, gid_t{1}};
    const auto peers =
        unreachable_peers(allowing({kStranger}, {kDaemonGroup}), tmp.path("mcpd.sock"),
                          group_socket, false, SocketState::planned);
    REQUIRE(peers.size() == 1);
    CHECK(peers[0].who == "uid 4242424");
}

TEST_CASE("a directory they cannot search is named, with what to set", "[socket_reach]") {
    TempDir tmp("mcpd-reach");
    const std::string dir = tmp.path("private");
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(::chmod(tmp.path("").c_str(), 0711) == 0);
    const auto peers = unreachable_peers(allowing({}, {kDaemonGroup}), dir + "/mcpd.sock",
                                         SocketAccess{0666, {}}, false, SocketState::planned);
    REQUIRE(peers.size() == 1);
    CHECK(reach_text_has(peers[0].who, "the members of group 1"));
    CHECK(reach_text_has(peers[0].blocked, "cannot search " + dir + " (mode 0700"));
    const std::string warning = unreachable_warning(peers, dir + "/mcpd.sock");
    CHECK(reach_text_has(warning, "[daemon] socket to a path in a directory they can search"));
    CHECK_FALSE(reach_text_has(warning, "socket_group"));
}

TEST_CASE("a directory mcpd keeps private is judged by the mode it will give it",
          "[socket_reach]") {
    TempDir tmp("mcpd-reach");
    const std::string dir = tmp.path("mcpd");
    // Open now, but mcpd tightens its own directory to what the socket needs: 0700 for 0600.
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    REQUIRE(::chmod(tmp.path("").c_str(), 0711) == 0);
    const auto planned = unreachable_peers(allowing({}, {kDaemonGroup}), dir + "/mcpd.sock",
                                           SocketAccess{0666, {}}, true, SocketState::planned);
    CHECK(planned.empty());  // 0666 opens the directory to others (0711)
    const auto private_socket =
        unreachable_peers(allowing({}, {kDaemonGroup}), dir + "/mcpd.sock", SocketAccess{0600, {}},
                          true, SocketState::planned);
    REQUIRE(private_socket.size() == 1);
    CHECK(reach_text_has(private_socket[0].blocked, "cannot search " + dir + " (mode 0700"));
}

TEST_CASE("root and mcpd's own user are never named", "[socket_reach]") {
    TempDir tmp("mcpd-reach");
    const auto peers = unreachable_peers(
        allowing({"0", std::to_string(::geteuid()), "no-such-user-here"}, {"no-such-group-here"}),
        tmp.path("mcpd.sock"), SocketAccess{0600, {}}, false, SocketState::planned);
    CHECK(peers.empty());
}
