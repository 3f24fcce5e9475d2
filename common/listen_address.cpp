#include "common/listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>

#include "common/terminal_text.h"

namespace mcpd {

namespace {

constexpr std::string_view kLoopback = "127.0.0.1";
constexpr std::string_view kExpected =
    "expected HOST:PORT with an IPv4 address, [IPV6]:PORT, or a bare PORT (then 127.0.0.1), "
    "such as \"127.0.0.1:9464\"";

// `text` between double quotes, its control characters escaped.
std::string quoted(std::string_view text) {
    return '"' + escape_controls(text) + '"';
}

Failure invalid(std::string_view text, std::string_view why) {
    std::string sentence = "invalid listen address ";
    sentence += quoted(text);
    sentence += ": ";
    sentence += why;
    sentence += "; ";
    sentence += kExpected;
    return permanent_failure(std::move(sentence));
}

// A port number: decimal digits only, 0 to 65535.
bool parse_port(std::string_view text, std::uint16_t& port) {
    if (text.empty() || text.size() > 5) return false;
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value > 65535) return false;
    port = static_cast<std::uint16_t>(value);
    return true;
}

// The canonical text of an address literal of `family`, or "" when `text` is none.
std::string canonical(int family, std::string_view text) {
    const std::string terminated(text);
    unsigned char bytes[sizeof(in6_addr)];
    if (inet_pton(family, terminated.c_str(), bytes) != 1) return {};
    char out[INET6_ADDRSTRLEN];
    if (inet_ntop(family, bytes, out, sizeof out) == nullptr) return {};
    return out;
}

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text) {
    if (text.empty()) return invalid(text, "it is empty");
    ListenAddress address;
    std::uint16_t port = 0;
    if (parse_port(text, port)) {
        address.host = kLoopback;
        address.port = port;
        return address;
    }
    if (text.find_first_not_of("0123456789") == std::string_view::npos)
        return invalid(text, "the port " + quoted(text) + " is not a number from 0 to 65535");
    std::string_view host;
    std::string_view port_text;
    if (text.front() == '[') {
        const std::size_t close = text.find(']');
        if (close == std::string_view::npos) return invalid(text, "the '[' is never closed");
        host = text.substr(1, close - 1);
        if (close + 1 >= text.size() || text[close + 1] != ':')
            return invalid(text, "no :PORT follows the ']'");
        port_text = text.substr(close + 2);
        address.ipv6 = true;
    } else {
        const std::size_t colon = text.rfind(':');
        if (colon == std::string_view::npos) return invalid(text, "it has no :PORT");
        host = text.substr(0, colon);
        port_text = text.substr(colon + 1);
        if (host.find(':') != std::string_view::npos)
            return invalid(text, "an IPv6 address goes between brackets, as in \"[::1]:9464\"");
    }
    if (!parse_port(port_text, address.port))
        return invalid(text, "the port " + quoted(port_text) + " is not a number from 0 to 65535");
    if (address.ipv6) {
        address.host = canonical(AF_INET6, host);
        if (address.host.empty()) return invalid(text, quoted(host) + " is not an IPv6 address");
    } else if (host == "localhost") {
        address.host = kLoopback;
    } else {
        address.host = canonical(AF_INET, host);
        if (address.host.empty())
            return invalid(text,
                           quoted(host) + " is not an IPv4 address (host names are not looked up)");
    }
    return address;
}

std::string to_string(const ListenAddress& address) {
    std::string text = address.ipv6 ? "[" + address.host + "]" : address.host;
    text += ':';
    text += std::to_string(address.port);
    return text;
}

}  // namespace mcpd
