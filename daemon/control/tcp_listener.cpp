#include "daemon/control/tcp_listener.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/check.h"

namespace mcpd {

namespace {

constexpr int kBacklog = 64;

// Whether trying again later may help: the system ran short, nothing is wrong with the address.
bool short_of_resources(int error) {
    return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

Failure socket_failure(const std::string& what, int error, std::string_view key) {
    std::string sentence = what + ": " + std::strerror(error);
    if (error == EADDRINUSE)
        sentence +=
            " (another program listens there: choose another port for [daemon] " +
            std::string(key) + ", or stop that program)";
    else if (error == EADDRNOTAVAIL)
        sentence += " (no interface of this machine has that address)";
    else if (error == EACCES)
        sentence += " (ports below 1024 need privileges: choose a port from 1024 up)";
    return Failure{std::move(sentence), short_of_resources(error)};
}

// The socket address of `address`, and its length.
socklen_t to_sockaddr(const ListenAddress& address, sockaddr_storage& storage) {
    storage = {};
    if (address.ipv6) {
        auto& in6 = reinterpret_cast<sockaddr_in6&>(storage);
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons(address.port);
        MCPD_CHECK(inet_pton(AF_INET6, address.host.c_str(), &in6.sin6_addr) == 1,
                   "a parsed IPv6 listen address does not convert");
        return sizeof in6;
    }
    auto& in4 = reinterpret_cast<sockaddr_in&>(storage);
    in4.sin_family = AF_INET;
    in4.sin_port = htons(address.port);
    MCPD_CHECK(inet_pton(AF_INET, address.host.c_str(), &in4.sin_addr) == 1,
               "a parsed IPv4 listen address does not convert");
    return sizeof in4;
}

}  // namespace

Result<UniqueFd> bind_tcp_listener(ListenAddress& address, std::string_view key) {
    sockaddr_storage storage;
    const socklen_t length = to_sockaddr(address, storage);
    const std::string where = to_string(address);
    UniqueFd fd(::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return socket_failure("cannot create a socket for " + where, errno, key);
    const int on = 1;
    // A restarted mcpd gets its port back while the last scrape's connection is in TIME_WAIT.
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0)
        return socket_failure("cannot set SO_REUSEADDR on " + where, errno, key);
    // [::] means IPv6 only, as written; 0.0.0.0 is IPv4's.
    if (address.ipv6 && ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0)
        return socket_failure("cannot set IPV6_V6ONLY on " + where, errno, key);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&storage), length) != 0)
        return socket_failure("cannot bind " + where, errno, key);
    if (::listen(fd.get(), kBacklog) != 0)
        return socket_failure("cannot listen on " + where, errno, key);
    if (Result<Done> port = read_bound_port(fd.get(), address, key); !port) return port.failure();
    return fd;
}

Result<Done> read_bound_port(int fd, ListenAddress& address, std::string_view key) {
    sockaddr_storage bound{};
    socklen_t bound_length = sizeof bound;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0)
        return socket_failure("cannot read the address of " + to_string(address), errno, key);
    if (bound.ss_family != (address.ipv6 ? AF_INET6 : AF_INET))
        return permanent_failure(std::string(key) + ": the socket for " + to_string(address) +
                                 " is not of its address family");
    address.port = ntohs(address.ipv6 ? reinterpret_cast<const sockaddr_in6&>(bound).sin6_port
                                      : reinterpret_cast<const sockaddr_in&>(bound).sin_port);
    return Done{};
}


}  // namespace mcpd
