#include "ctl/endpoint.h"

#include <cstdlib>

#include "common/control_protocol.h"

namespace mcpctl {

namespace {

constexpr std::string_view kSsh = "ssh://";
constexpr std::string_view kUnix = "unix://";

bool all_digits(std::string_view text) {
    if (text.empty()) return false;
    for (const char c : text)
        if (c < '0' || c > '9') return false;
    return true;
}

// "[user@]host[:port]" after "ssh://", up to the path.
bool parse_authority(std::string_view authority, SshTarget& target, std::string& error) {
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        target.user = std::string(authority.substr(0, at));
        authority.remove_prefix(at + 1);
        if (target.user.empty()) {
            error = "the user before '@' is empty";
            return false;
        }
    }
    std::string_view port;
    if (authority.starts_with('[')) {  // [IPv6]:port
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            error = "an IPv6 address in brackets lacks its ']'";
            return false;
        }
        target.host = std::string(authority.substr(1, close - 1));
        const std::string_view rest = authority.substr(close + 1);
        if (!rest.empty() && !rest.starts_with(':')) {
            error = "expected ':PORT' after the ']'";
            return false;
        }
        if (!rest.empty()) port = rest.substr(1);
        if (!rest.empty() && port.empty()) {
            error = "the port after ':' is empty";
            return false;
        }
    } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
        target.host = std::string(authority.substr(0, colon));
        port = authority.substr(colon + 1);
        if (port.empty()) {
            error = "the port after ':' is empty";
            return false;
        }
    } else {
        target.host = std::string(authority);
    }
    if (target.host.empty()) {
        error = "there is no host name";
        return false;
    }
    // A leading '-' would be read by ssh as an option.
    if (target.host.starts_with('-') || target.user.starts_with('-')) {
        error = "a host or user may not start with '-'";
        return false;
    }
    if (!port.empty()) {
        if (!all_digits(port) || port.size() > 5 || std::atoi(std::string(port).c_str()) == 0 ||
            std::atoi(std::string(port).c_str()) > 65535) {
            error = "the port '" + std::string(port) + "' is not a number from 1 to 65535";
            return false;
        }
        target.port = std::string(port);
    }
    return true;
}

}  // namespace

std::string Endpoint::describe() const {
    if (!ssh) return socket_path;
    std::string text(kSsh);
    if (!ssh->user.empty()) text += ssh->user + "@";
    text += ssh->host.find(':') != std::string::npos ? "[" + ssh->host + "]" : ssh->host;
    if (!ssh->port.empty()) text += ":" + ssh->port;
    text += ssh->socket;
    return text;
}

bool parse_host(std::string_view url, Endpoint& out, std::string& error) {
    const std::string given(url);
    if (url.starts_with(kUnix)) {
        url.remove_prefix(kUnix.size());
        if (!url.starts_with('/')) {
            error = "'" + given + "' is not a host: a unix:// URL needs an absolute path";
            return false;
        }
        out = Endpoint{std::string(url), std::nullopt, {}};
        return true;
    }
    if (!url.starts_with(kSsh)) {
        error = "'" + given +
                "' is not a host: expected ssh://[USER@]HOST[:PORT][/SOCKET] or "
                "unix:///SOCKET";
        return false;
    }
    url.remove_prefix(kSsh.size());
    const auto slash = url.find('/');
    SshTarget target;
    std::string why;
    if (!parse_authority(url.substr(0, slash), target, why)) {
        error = "'" + given + "' is not a host: " + why;
        return false;
    }
    if (slash != std::string_view::npos && slash + 1 < url.size())
        target.socket = std::string(url.substr(slash));
    out = Endpoint{{}, std::move(target), {}};
    return true;
}

bool resolve_endpoint(std::string_view host_flag, std::string_view socket_flag, Endpoint& out,
                      std::string& error) {
    std::string host(host_flag);
    if (host.empty()) {
        const char* env = std::getenv("MCPD_HOST");
        if (env != nullptr) host = env;
    }
    if (host.empty()) {
        mcpd::control::SocketChoice choice = mcpd::control::client_socket(socket_flag);
        out = Endpoint{std::move(choice.path), std::nullopt, std::move(choice.reason)};
        return true;
    }
    if (!parse_host(host, out, error)) {
        if (host_flag.empty()) error = "MCPD_HOST: " + error;
        return false;
    }
    out.reason = host_flag.empty() ? "$MCPD_HOST names it" : "--host names it";
    if (out.ssh && out.ssh->socket.empty()) out.ssh->socket = std::string(socket_flag);
    if (!out.ssh && !socket_flag.empty()) {
        error = "--socket and a unix:// host both name the socket; give one";
        return false;
    }
    return true;
}

std::string shell_quote(std::string_view text) {
    std::string quoted = "'";
    for (const char c : text) {
        if (c == '\'')
            quoted += "'\\''";
        else
            quoted += c;
    }
    return quoted + "'";
}

std::vector<std::string> ssh_command(const SshTarget& target, const char* ssh_command_env) {
    std::vector<std::string> words;
    if (ssh_command_env != nullptr && ssh_command_env[0] != '\0') {
        // sh -c 'CMD "$@"' ssh ARGS...: the user's text may hold options and quoting.
        words = {"/bin/sh", "-c", std::string(ssh_command_env) + " \"$@\"", "ssh"};
    } else {
        words = {"ssh"};
    }
    // No terminal (the channel carries protocol lines), no X11 forwarding.
    words.insert(words.end(), {"-T", "-x"});
    if (!target.user.empty()) words.insert(words.end(), {"-l", target.user});
    if (!target.port.empty()) words.insert(words.end(), {"-p", target.port});
    words.insert(words.end(), {"--", target.host});
    std::string remote = "mcpctl";
    if (!target.socket.empty()) remote += " --socket " + shell_quote(target.socket);
    remote += " dial";
    words.push_back(remote);
    return words;
}

}  // namespace mcpctl
