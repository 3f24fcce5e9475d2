// Which socket a client talks to when it is not told.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/control_protocol.h"

namespace fs = std::filesystem;
using mcpd::control::client_socket_path;

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
