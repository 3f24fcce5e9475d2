// A TCP listener on 127.0.0.1 that a test holds open, for what a sandbox lets a server reach.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>

#include "common/unique_fd.h"

namespace integration {

struct LoopbackListener {
    mcpd::UniqueFd fd;
    int port = 0;
    LoopbackListener() {
        fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        REQUIRE(fd);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
        REQUIRE(::listen(fd.get(), 16) == 0);
        socklen_t size = sizeof address;
        REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address), &size) == 0);
        port = ntohs(address.sin_port);
    }
};

}  // namespace integration
