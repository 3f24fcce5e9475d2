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
mcpd::Result<SshTarget> parse_authority(std::string_view authority) {
    using mcpd::permanent_failure;
    SshTarget target;
    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        target.user = std::string(authority.substr(0, at));
        authority.remove_prefix(at + 1);
        if (target.user.empty()) return permanent_failure("the user before '@' is empty");
    }
    std::string_view port;
    if (authority.starts_with('[')) {  // [IPv6]:port
        const auto close = authority.find(']');
        if (close == std::string_view::npos)
            return permanent_failure("an IPv6 address in brackets lacks its ']'");
        target.host = std::string(authority.substr(1, close - 1));
        const std::string_view rest = authority.substr(close + 1);
        if (!rest.empty() && !rest.starts_with(':'))
            return permanent_failure("expected ':PORT' after the ']'");
        if (!rest.empty()) port = rest.substr(1);
        if (!rest.empty() && port.empty()) return permanent_failure("the port after ':' is empty");
    } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
        target.host = std::string(authority.substr(0, colon));
        port = authority.substr(colon + 1);
        if (port.empty()) return permanent_failure("the port after ':' is empty");
    } else {
        target.host = std::string(authority);
    }
    if (target.host.empty()) return permanent_failure("there is no host name");
    // A leading '-' would be read by ssh as an option.
    if (target.host.starts_with('-') || target.user.starts_with('-'))
        return permanent_failure("a host or user may not start with '-'");
    if (!port.empty()) {
        if (!all_digits(port) || port.size() > 5 || std::atoi(std::string(port).c_str()) == 0 ||
            std::atoi(std::string(port).c_str()) > 65535)
            return permanent_failure("the port '" + std::string(port) +
                                     "' is not a number from 1 to 65535");
        target.port = std::string(port);
    }
    return target;
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

mcpd::Result<Endpoint> parse_host(std::string_view url) {
    const std::string given(url);
    if (url.starts_with(kUnix)) {
        url.remove_prefix(kUnix.size());
        if (!url.starts_with('/'))
            return mcpd::permanent_failure("'" + given +
                                           "' is not a host: a unix:// URL needs an absolute path");
        return Endpoint{std::string(url), std::nullopt, {}};
    }
    if (!url.starts_with(kSsh))
        return mcpd::permanent_failure(
            "'" + given +
            "' is not a host: expected ssh://[USER@]HOST[:PORT][/SOCKET] "
            "or unix:///SOCKET");
    url.remove_prefix(kSsh.size());
    const auto slash = url.find('/');
    mcpd::Result<SshTarget> target = parse_authority(url.substr(0, slash));
    if (!target) return mcpd::permanent_failure("'" + given + "' is not a host: " + target.error());
    if (slash != std::string_view::npos && slash + 1 < url.size())
        target->socket = std::string(url.substr(slash));
    return Endpoint{{}, std::move(target).value(), {}};
}

mcpd::Result<Endpoint> resolve_endpoint(std::string_view host_flag, std::string_view socket_flag) {
    std::string host(host_flag);
    if (host.empty()) {
        const char* env = std::getenv("MCPD_HOST");
        if (env != nullptr) host = env;
    }
    if (host.empty()) {
        mcpd::control::SocketChoice choice = mcpd::control::client_socket(socket_flag);
        return Endpoint{std::move(choice.path), std::nullopt, std::move(choice.reason)};
    }
    mcpd::Result<Endpoint> parsed = parse_host(host);
    if (!parsed) {
        if (!host_flag.empty()) return parsed;
        std::string sentence = "MCPD_HOST: ";  // appended: gcc 12 warns on "literal" + string
        sentence += parsed.error();
        return mcpd::permanent_failure(std::move(sentence));
    }
    Endpoint out = std::move(parsed).value();
    out.reason = host_flag.empty() ? "$MCPD_HOST names it" : "--host names it";
    if (out.ssh && out.ssh->socket.empty()) out.ssh->socket = std::string(socket_flag);
    if (!out.ssh && !socket_flag.empty())
        return mcpd::permanent_failure(
            "--socket and a unix:// host both name the socket; give one");
    return out;
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
