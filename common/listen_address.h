// Where a TCP listener of mcpd's binds ([daemon] metrics_listen): "HOST:PORT" with an IPv4
// address, "[IPV6]:PORT", or a bare "PORT" on 127.0.0.1. Addresses only: nothing is looked up,
// so reading the registry never waits on a resolver ("localhost" is taken as 127.0.0.1).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mcpd {

struct ListenAddress {
    std::string host;        // the address in its canonical form, without brackets
    std::uint16_t port = 0;  // 0: any free port, chosen when the socket is bound
    bool ipv6 = false;

    bool operator==(const ListenAddress&) const = default;
};

// The address `text` names, or a sentence saying what was given and what is expected.
Result<ListenAddress> parse_listen_address(std::string_view text);

// "127.0.0.1:9464", "[::1]:9464": the form parse_listen_address reads back.
std::string to_string(const ListenAddress& address);

}  // namespace mcpd
