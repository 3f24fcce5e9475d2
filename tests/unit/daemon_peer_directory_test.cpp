// A directory a peer names becomes a project only when the peer itself may open it: resolved
// (symlinks, `.`, `..`) and opened with the peer's uid, gid and groups, so that ACLs and every
// component count exactly as for the peer (daemon/control/peer_directory.h). These run as
// root, as CI does: the rules for another user can only be tried by a process that can take
// that user's identity.
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/control/peer_directory.h"
#include "daemon/peer_project.h"

using mcpd::PeerCredentials;

namespace {

// Uids and a gid no account uses (the tests chown to them; nothing else is touched).
constexpr uid_t kPeerDirStranger = 64011;
constexpr uid_t kPeerDirOther = 64012;
constexpr gid_t kPeerDirTeam = 64013;

PeerCredentials peer_with_uid(uid_t uid, std::vector<gid_t> groups = {}) {
    PeerCredentials peer;
    peer.pid = 1;
    peer.uid = uid;
    peer.gid = static_cast<gid_t>(uid);
    peer.groups = std::move(groups);
    peer.groups_known = true;
    return peer;
}

// A fresh directory under the temporary directory, removed with everything in it.
struct PeerDirScratch {
    PeerDirScratch() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "mcpd-peerdir-XXXXXX").string();
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        path = pattern;
        REQUIRE(::chmod(path.c_str(), 0755) == 0);
    }
    ~PeerDirScratch() {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
    }
    std::string make(const std::string& name, mode_t mode, uid_t owner = 0, gid_t group = 0) const {
        const std::string dir = path + "/" + name;
        REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
        REQUIRE(::chown(dir.c_str(), owner, group) == 0);
        REQUIRE(::chmod(dir.c_str(), mode) == 0);
        return dir;
    }
    std::string path;
};

// A POSIX access ACL as the kernel reads it from system.posix_acl_access (version 2, then
// tag/permission/id entries), so that the test needs no acl tools.
struct AclEntry {
    std::uint16_t tag;
    std::uint16_t perm;
    std::uint32_t id;
};
void set_acl(const std::string& path, const std::vector<AclEntry>& entries) {
    std::vector<unsigned char> blob;
    auto put16 = [&](std::uint16_t v) {
        blob.push_back(v & 0xFF);
        blob.push_back(v >> 8);
    };
    auto put32 = [&](std::uint32_t v) {
        for (int i = 0; i < 4; ++i) blob.push_back(static_cast<unsigned char>(v >> (8 * i)));
    };
    put32(2);
    for (const AclEntry& e : entries) {
        put16(e.tag);
        put16(e.perm);
        put32(e.id);
    }
    REQUIRE(::setxattr(path.c_str(), "system.posix_acl_access", blob.data(), blob.size(), 0) == 0);
}
constexpr std::uint16_t kAclUserObj = 0x01, kAclUser = 0x02, kAclGroupObj = 0x04, kAclMask = 0x10,
                        kAclOther = 0x20;
constexpr std::uint32_t kAclUndefined = 0xFFFFFFFF;

void require_root_for_peer_directory() {
    INFO("these tests take other users' identities: run them as root, as CI does");
    REQUIRE(::geteuid() == 0);
}

}  // namespace

TEST_CASE("a directory is resolved and opened as the peer: its own, yes, another's 0700, no",
          "[peer_directory]") {
    require_root_for_peer_directory();
    const PeerDirScratch scratch;
    const std::string owners = scratch.make("owners", 0700);
    const std::string strangers = scratch.make("strangers", 0700, kPeerDirStranger, kPeerDirStranger);
    REQUIRE(::symlink(strangers.c_str(), (scratch.path + "/link").c_str()) == 0);

    // The stranger opens its own directory, reached through a symlink and `..`: canonical.
    const auto own = mcpd::peer_directory(peer_with_uid(kPeerDirStranger), scratch.path + "/owners/../link", 0);
    REQUIRE(own);
    CHECK(own.value() == std::filesystem::canonical(strangers).string());
    // mcpd (root) could open the owner's 0700 directory; the stranger cannot, and is told.
    const auto denied = mcpd::peer_directory(peer_with_uid(kPeerDirStranger), owners, 0);
    REQUIRE_FALSE(denied);
    CHECK(denied.error().find(owners) != std::string::npos);
    CHECK(denied.error().find("uid 64011 cannot") != std::string::npos);
    CHECK(denied.error().find("Permission denied") != std::string::npos);
    // Nor anything below it: every component counts.
    const std::string inner = owners + "/inner";
    REQUIRE(::mkdir(inner.c_str(), 0777) == 0);
    REQUIRE(::chmod(inner.c_str(), 0777) == 0);
    CHECK_FALSE(mcpd::peer_directory(peer_with_uid(kPeerDirStranger), inner, 0));
    // Root as a peer may have it.
    CHECK(mcpd::peer_directory(peer_with_uid(0), owners, 0));
    // mcpd's identity is its own again afterwards: it still opens what only root may.
    CHECK(mcpd::peer_directory(peer_with_uid(0), owners, 0).value() ==
          std::filesystem::canonical(owners).string());
}

TEST_CASE("a peer's groups and the directory's ACL decide, not its mode bits", "[peer_directory]") {
    require_root_for_peer_directory();
    const PeerDirScratch scratch;
    // Group-readable by kPeerDirTeam: a member gets in, the same uid outside the group does not.
    const std::string team = scratch.make("team", 0750, 0, kPeerDirTeam);
    CHECK(mcpd::peer_directory(peer_with_uid(kPeerDirStranger, {kPeerDirTeam}), team, 0));
    CHECK_FALSE(mcpd::peer_directory(peer_with_uid(kPeerDirStranger), team, 0));

    // Mode 0700 but an ACL entry for kPeerDirOther: kPeerDirOther may open it.
    const std::string granted = scratch.make("granted", 0700);
    set_acl(granted, {{kAclUserObj, 7, kAclUndefined},
                      {kAclUser, 5, kPeerDirOther},
                      {kAclGroupObj, 0, kAclUndefined},
                      {kAclMask, 5, kAclUndefined},
                      {kAclOther, 0, kAclUndefined}});
    CHECK(mcpd::peer_directory(peer_with_uid(kPeerDirOther), granted, 0));
    CHECK_FALSE(mcpd::peer_directory(peer_with_uid(kPeerDirStranger), granted, 0));

    // World-readable mode bits, but an ACL entry that denies kPeerDirOther: kPeerDirOther may not.
    const std::string refused = scratch.make("refused", 0755);
    set_acl(refused, {{kAclUserObj, 7, kAclUndefined},
                      {kAclUser, 0, kPeerDirOther},
                      {kAclGroupObj, 5, kAclUndefined},
                      {kAclMask, 5, kAclUndefined},
                      {kAclOther, 5, kAclUndefined}});
    CHECK_FALSE(mcpd::peer_directory(peer_with_uid(kPeerDirOther), refused, 0));
    CHECK(mcpd::peer_directory(peer_with_uid(kPeerDirStranger), refused, 0));
}

TEST_CASE("a daemon that is not root takes no other user's directory", "[peer_directory]") {
    const PeerDirScratch scratch;
    // mcpd as uid 1000 cannot take uid 1001's identity: refused whatever the directory.
    const auto refused = mcpd::peer_directory(peer_with_uid(1001), scratch.path, 1000);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().find("not as root") != std::string::npos);
    // Its own user's, yes.
    CHECK(mcpd::peer_directory(peer_with_uid(1000), scratch.path, 1000));
    // Not a path, or not absolute: refused before anything is opened.
    CHECK_FALSE(mcpd::peer_directory(peer_with_uid(1000), "relative/dir", 1000));
    CHECK_FALSE(mcpd::peer_directory(peer_with_uid(1000), "", 1000));
    const auto missing = mcpd::peer_directory(peer_with_uid(1000), scratch.path + "/missing", 1000);
    REQUIRE_FALSE(missing);
    CHECK(missing.error().find("No such file") != std::string::npos);
}

TEST_CASE("a project as its peer may have it: canonical roots, keyed by the peer's uid",
          "[peer_directory][project]") {
    require_root_for_peer_directory();
    const PeerDirScratch scratch;
    const std::string mine = scratch.make("mine", 0700, kPeerDirStranger, kPeerDirStranger);
    const std::string secret = scratch.make("secret", 0700);
    REQUIRE(::symlink(mine.c_str(), (scratch.path + "/alias").c_str()) == 0);

    mcpd::Project reported;
    reported.directory = scratch.path + "/alias";
    reported.roots = {mcpd::directory_uri(scratch.path + "/alias")};
    reported.from_roots = true;
    const auto checked = mcpd::project_for_peer(reported, peer_with_uid(kPeerDirStranger), 0);
    REQUIRE(checked);
    const std::string canonical = std::filesystem::canonical(mine).string();
    CHECK(checked->directory == canonical);
    CHECK(checked->roots == std::vector<std::string>{mcpd::directory_uri(canonical)});
    CHECK(checked->user == kPeerDirStranger);
    // The same directory as another user is another project (another child).
    const auto as_root = mcpd::project_for_peer(reported, peer_with_uid(0), 0);
    REQUIRE(as_root);
    CHECK(as_root->key() != checked->key());

    // A second root the peer may not open refuses the whole project, naming it.
    reported.roots.push_back(mcpd::directory_uri(secret));
    const auto refused = mcpd::project_for_peer(reported, peer_with_uid(kPeerDirStranger), 0);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().find(secret) != std::string::npos);
}
