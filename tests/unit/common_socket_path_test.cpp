// Which socket a client talks to when it is not told.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/control_protocol.h"

namespace fs = std::filesystem;
using mcpd::control::client_socket;
using mcpd::control::client_socket_path;
using mcpd::control::default_socket;

TEST_CASE("the client socket: flag, then MCPD_SOCKET, then the user's, then the system's") {
    const fs::path dir = fs::temp_directory_path() / ("mcpd-socket-path-" + std::to_string(::getpid()));
    fs::create_directories(dir / "runtime" / "mcpd");
    const std::string system_socket = (dir / "system.sock").string();
    const std::string user_socket = (dir / "runtime" / "mcpd" / "mcpd.sock").string();
    ::setenv("XDG_RUNTIME_DIR", (dir / "runtime").c_str(), 1);
    ::unsetenv("MCPD_SOCKET");

    // Neither exists: the user's default (the error then names it).
    CHECK(client_socket_path("", system_socket) == user_socket);
    // Only the system service's exists: use it.
    std::ofstream(system_socket).put('x');
    CHECK(client_socket_path("", system_socket) == system_socket);
    // The user's own daemon wins when both exist.
    std::ofstream(user_socket).put('x');
    CHECK(client_socket_path("", system_socket) == user_socket);
    // Explicit choices always win.
    ::setenv("MCPD_SOCKET", "/env.sock", 1);
    CHECK(client_socket_path("", system_socket) == "/env.sock");
    CHECK(client_socket_path("/flag.sock", system_socket) == "/flag.sock");

    ::unsetenv("MCPD_SOCKET");
    ::unsetenv("XDG_RUNTIME_DIR");
    fs::remove_all(dir);
}

// SDK-based clients start `mcpctl connect` with HOME, PATH and little else: no XDG_RUNTIME_DIR.
TEST_CASE("without XDG_RUNTIME_DIR the user's own /run/user/UID comes before /tmp") {
    const fs::path dir = fs::temp_directory_path() / ("mcpd-run-user-" + std::to_string(::getpid()));
    const std::string uid = std::to_string(::getuid());
    const std::string run_user = (dir / "run-user").string();
    fs::create_directories(run_user);
    ::unsetenv("XDG_RUNTIME_DIR");
    ::unsetenv("MCPD_SOCKET");

    // No runtime directory of ours: the /tmp fallback, and the reason says so.
    auto choice = default_socket(run_user);
    CHECK(choice.path == "/tmp/mcpd-" + uid + "/mcpd.sock");
    CHECK(choice.reason.find("XDG_RUNTIME_DIR is unset") != std::string::npos);
    // A symbolic link is not a runtime directory (another user could have made it).
    fs::create_directory_symlink(dir, run_user + "/" + uid);
    CHECK(default_socket(run_user).path == "/tmp/mcpd-" + uid + "/mcpd.sock");
    fs::remove(run_user + "/" + uid);
    // A real directory of this user's: the daemon systemd --user would run listens there.
    fs::create_directory(run_user + "/" + uid);
    choice = default_socket(run_user);
    CHECK(choice.path == run_user + "/" + uid + "/mcpd/mcpd.sock");
    CHECK(choice.reason.find(run_user + "/" + uid) != std::string::npos);
    CHECK(client_socket("", "/nonexistent/system.sock", run_user).path == choice.path);
    // XDG_RUNTIME_DIR, when set, wins.
    ::setenv("XDG_RUNTIME_DIR", "/elsewhere", 1);
    choice = client_socket("", "/nonexistent/system.sock", run_user);
    CHECK(choice.path == "/elsewhere/mcpd/mcpd.sock");
    CHECK(choice.reason == "$XDG_RUNTIME_DIR is set");
    CHECK(client_socket("/flag.sock", "/x", run_user).reason == "--socket names it");

    ::unsetenv("XDG_RUNTIME_DIR");
    fs::remove_all(dir);
}

TEST_CASE("a directory of another user's is not this user's runtime directory") {
    if (::geteuid() != 0) {
        // Only root can give a directory away; CI runs as root.
        FAIL("this case needs root to create a directory owned by another uid");
    }
    const fs::path dir = fs::temp_directory_path() / ("mcpd-run-other-" + std::to_string(::getpid()));
    const std::string run_user = (dir / "run-user").string();
    const std::string mine = run_user + "/" + std::to_string(::getuid());
    fs::create_directories(mine);
    REQUIRE(::chown(mine.c_str(), 64999, 64999) == 0);
    ::unsetenv("XDG_RUNTIME_DIR");
    CHECK(default_socket(run_user).path == "/tmp/mcpd-" + std::to_string(::getuid()) + "/mcpd.sock");
    fs::remove_all(dir);
}
