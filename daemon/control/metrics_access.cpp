#include "daemon/control/metrics_access.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

#include "common/ascii.h"
#include "common/file_mode.h"
#include "common/unique_fd.h"
#include "daemon/control/http_message.h"

namespace mcpd {

namespace {

// An address's bytes (4 or 16), or false when `text` is no literal of that family.
bool address_bytes(const std::string& text, bool ipv6, std::array<unsigned char, 16>& out) {
    out = {};
    return ::inet_pton(ipv6 ? AF_INET6 : AF_INET, text.c_str(), out.data()) == 1;
}

bool is_loopback(const ListenAddress& bound) {
    return bound.ipv6 ? bound.host == "::1" : bound.host.starts_with("127.");
}

bool is_wildcard(const ListenAddress& bound) {
    return bound.host == (bound.ipv6 ? "::" : "0.0.0.0");
}

}  // namespace

Result<std::string> read_metrics_token(const std::string& path, uid_t owner) {
    const std::string where = "metrics_token_file " + path;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (!fd) {
        return permanent_failure(
            "cannot read " + where + ": " + std::strerror(errno) +
            (errno == ELOOP ? " (a symbolic link is not followed: name the file itself)" : ""));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        return permanent_failure("cannot read " + where + ": " + std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return permanent_failure(where + " is not a regular file: write the token into a file");
    if (st.st_uid != owner && st.st_uid != 0) {
        return permanent_failure(where + " belongs to uid " + std::to_string(st.st_uid) +
                                 ": it must belong to mcpd's user (uid " + std::to_string(owner) +
                                 ") or root");
    }
    if ((st.st_mode & 077) != 0) {
        return permanent_failure(where + " has mode " + mode_octal(st.st_mode) +
                                 ", so other users may read or change the token: make it 0600 "
                                 "(chmod 600 " +
                                 path + ")");
    }
    std::string text(kMaxMetricsTokenBytes + 2, '\0');
    std::size_t got = 0;
    while (got < text.size()) {
        const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return permanent_failure("cannot read " + where + ": " + std::strerror(errno));
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    text.resize(got);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.size() > kMaxMetricsTokenBytes) {
        return permanent_failure(where + " holds more than " +
                                 std::to_string(kMaxMetricsTokenBytes) +
                                 " bytes: a token is one line, such as the output of "
                                 "'openssl rand -hex 32'");
    }
    if (text.empty())
        return permanent_failure(where +
                                 " is empty: write a token into it, such as the output of "
                                 "'openssl rand -hex 32'");
    for (const char c : text) {
        if (c < 0x21 || c > 0x7E) {
            return permanent_failure(where +
                                     " holds a character that is not visible ASCII (a "
                                     "space, a control character, or not ASCII): a token "
                                     "is one word, such as the output of 'openssl rand -hex 32'");
        }
    }
    return text;
}

bool host_names(std::string_view host, const ListenAddress& bound) {
    std::string name;
    std::string_view port_text;
    if (host.starts_with('[')) {
        const std::size_t close = host.find(']');
        if (close == std::string_view::npos) return false;
        name = host.substr(1, close - 1);
        const std::string_view rest = host.substr(close + 1);
        if (!rest.empty() && !rest.starts_with(':')) return false;
        if (!rest.empty()) port_text = rest.substr(1);
        if (!bound.ipv6) return false;
    } else {
        const std::size_t colon = host.find(':');
        name = host.substr(0, colon);
        if (colon != std::string_view::npos) port_text = host.substr(colon + 1);
    }
    unsigned port = 80;
    if (!port_text.empty() || host.ends_with(':')) {
        const auto [end, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size())
            return false;
    }
    if (port != bound.port) return false;
    if (ascii_equal_ignoring_case(name, "localhost")) return is_loopback(bound);
    std::array<unsigned char, 16> given{}, own{};
    if (!address_bytes(name, bound.ipv6, given)) return false;
    if (is_wildcard(bound)) return true;
    return address_bytes(bound.host, bound.ipv6, own) && given == own;
}

bool bearer_matches(std::string_view authorization, std::string_view token) {
    const std::optional<std::string_view> credentials = bearer_credentials(authorization);
    if (!credentials) return false;
    const std::string_view given = *credentials;
    // Every byte of the token is looked at whatever the given one holds.
    unsigned char differ = given.size() == token.size() ? 0 : 1;
    for (std::size_t i = 0; i < token.size(); ++i) {
        const char other = i < given.size() ? given[i] : '\0';
        differ |= static_cast<unsigned char>(token[i] ^ other);
    }
    return differ == 0 && !token.empty();
}

}  // namespace mcpd
