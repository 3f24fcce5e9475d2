// The socket directory's checks: what mcpd creates, tightens and refuses.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "daemon/control/socket_directory.h"
#include "temp_dir.h"

using mcpd::directory_mode_for;
using mcpd::prepare_socket_directory;
using mcpd::SocketAccess;

namespace {

mode_t mode_of(const std::string& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("the socket directory's mode lets in exactly the classes the socket does") {
    CHECK(directory_mode_for(SocketAccess{0600, std::nullopt}) == 0700);
    CHECK(directory_mode_for(SocketAccess{0660, std::nullopt}) == 0710);
    CHECK(directory_mode_for(SocketAccess{0666, std::nullopt}) == 0711);
    CHECK(directory_mode_for(SocketAccess{0606, std::nullopt}) == 0701);
}

TEST_CASE("a missing socket directory is created private, parents included") {
    TempDir tmp("mcpd-sockdir");
    const std::string dir = tmp.path("a/b/mcpd");
    std::string error;
    const mode_t old = ::umask(0);  // what the umask would add must not show
    REQUIRE(prepare_socket_directory(dir, SocketAccess{}, true, error));
    ::umask(old);
    CHECK(error.empty());
    CHECK(mode_of(dir) == 0700);
    CHECK(mode_of(tmp.path("a")) == 0700);
    // With a group socket, the group may search it, not list or write it.
    const std::string shared = tmp.path("shared");
    REQUIRE(prepare_socket_directory(shared, SocketAccess{0660, std::nullopt}, true, error));
    CHECK(mode_of(shared) == 0710);
}

TEST_CASE("an own socket directory that others may only read is tightened") {
    TempDir tmp("mcpd-sockdir");
    const std::string dir = tmp.path("mcpd");
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    std::string error;
    REQUIRE(prepare_socket_directory(dir, SocketAccess{}, true, error));
    CHECK(mode_of(dir) == 0700);
}

TEST_CASE("an own socket directory that others may write is refused, and left as it was") {
    TempDir tmp("mcpd-sockdir");
    const std::string dir = tmp.path("mcpd");
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    for (const mode_t mode : {mode_t{0770}, mode_t{0777}, mode_t{0720}, mode_t{01777}}) {
        REQUIRE(::chmod(dir.c_str(), mode) == 0);
        std::string error;
        CHECK_FALSE(prepare_socket_directory(dir, SocketAccess{}, true, error));
        CHECK(contains(error, "writable by other users"));
        CHECK(contains(error, dir));
        CHECK(contains(error, "rm -r"));
        CHECK(mode_of(dir) == mode);
    }
}

TEST_CASE("a symbolic link or a file is never a socket directory") {
    TempDir tmp("mcpd-sockdir");
    const std::string real = tmp.path("real");
    REQUIRE(::mkdir(real.c_str(), 0700) == 0);
    const std::string link = tmp.path("link");
    REQUIRE(::symlink(real.c_str(), link.c_str()) == 0);
    std::string error;
    CHECK_FALSE(prepare_socket_directory(link, SocketAccess{}, true, error));
    CHECK(contains(error, "symbolic link"));
    CHECK_FALSE(prepare_socket_directory(link, SocketAccess{}, false, error));
    const std::string file = tmp.path("file");
    { std::FILE* f = std::fopen(file.c_str(), "w"); REQUIRE(f != nullptr); std::fclose(f); }
    CHECK_FALSE(prepare_socket_directory(file, SocketAccess{}, true, error));
    CHECK(contains(error, "not a directory"));
}

TEST_CASE("a named socket directory may be shared only when sticky") {
    TempDir tmp("mcpd-sockdir");
    const std::string dir = tmp.path("named");
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    std::string error;
    // The administrator's own choice of mode is kept when nobody else can write there.
    REQUIRE(::chmod(dir.c_str(), 0755) == 0);
    CHECK(prepare_socket_directory(dir, SocketAccess{}, false, error));
    CHECK(mode_of(dir) == 0755);
    REQUIRE(::chmod(dir.c_str(), 0777) == 0);
    CHECK_FALSE(prepare_socket_directory(dir, SocketAccess{}, false, error));
    CHECK(contains(error, "lets other users replace the socket"));
    REQUIRE(::chmod(dir.c_str(), 01777) == 0);  // like /tmp
    CHECK(prepare_socket_directory(dir, SocketAccess{}, false, error));
}

TEST_CASE("a socket directory of another user's is refused, private or named") {
    if (::geteuid() != 0) FAIL("this case needs root to create a directory owned by another uid");
    TempDir tmp("mcpd-sockdir");
    const std::string dir = tmp.path("foreign");
    REQUIRE(::mkdir(dir.c_str(), 0700) == 0);
    REQUIRE(::chown(dir.c_str(), 64998, 64998) == 0);
    std::string error;
    CHECK_FALSE(prepare_socket_directory(dir, SocketAccess{}, true, error));
    CHECK(contains(error, "belongs to uid 64998"));
    CHECK(contains(error, "not to mcpd's user"));
    CHECK_FALSE(prepare_socket_directory(dir, SocketAccess{}, false, error));
    CHECK(mode_of(dir) == 0700);
}
