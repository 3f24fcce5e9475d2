#include "ctl/daemon_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "ctl/command.h"
#include "ctl/listener_check.h"

namespace mcpctl {

namespace {

using mcpd::Clock;

// Longer lines than this are not a reply mcpd would send; stop before eating all memory.
constexpr std::size_t kMaxLineBytes = 64 * 1024 * 1024;

timeval to_timeval(mcpd::Duration d) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    return timeval{static_cast<time_t>(us / 1000000), static_cast<suseconds_t>(us % 1000000)};
}

timespec to_timespec(Clock::duration d) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
    return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

// The start of a bad line, for an error message.
std::string excerpt(const std::string& line) {
    constexpr std::size_t kMax = 80;
    return line.size() <= kMax ? line : line.substr(0, kMax) + "...";
}

}  // namespace

std::string not_running_message(const std::string& socket_path) {
    return "mcpd is not running (nothing listens on " + socket_path +
           "). Start it with 'mcpd --config FILE' or 'systemctl --user start mcpd'.";
}

bool DaemonClient::fail(int exit_code, std::string code, std::string message) {
    error_ = ClientError{exit_code, std::move(code), std::move(message)};
    return false;
}

bool DaemonClient::tunnel_failed() {
    if (!endpoint_.ssh) return false;
    // ssh exits right after the channel closes; the wait only covers the scheduling.
    auto why = tunnel_.failure(*endpoint_.ssh, std::chrono::seconds(5));
    if (!why) return false;
    error_ = std::move(*why);
    return true;
}

bool DaemonClient::connect(mcpd::Duration timeout) {
    fd_.reset();
    buffer_.clear();
    if (endpoint_.ssh) {
        mcpd::Result<mcpd::UniqueFd> tunnel = tunnel_.open(*endpoint_.ssh);
        if (!tunnel) return fail(kExitError, "ssh", tunnel.error());
        fd_ = std::move(tunnel).value();
        const timeval tv = to_timeval(timeout);
        ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        return true;
    }
    const std::string& path = endpoint_.socket_path;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty()) return fail(kExitError, "connect", "no socket path to connect to");
    if (path.size() >= sizeof(addr.sun_path))
        return fail(kExitError, "connect",
                    "the socket path is too long (" + std::to_string(path.size()) +
                        " bytes, at most " + std::to_string(sizeof(addr.sun_path) - 1) +
                        "): " + path);
    std::memcpy(addr.sun_path, path.data(), path.size());

    mcpd::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd)
        return fail(kExitError, "connect",
                    std::string("cannot create a socket: ") + std::strerror(errno));
    // Bounds a connect to a full backlog and every later write.
    const timeval tv = to_timeval(timeout);
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

    int rc;
    do {
        rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        const int err = errno;
        if (err == ENOENT || err == ECONNREFUSED)
            return fail(kExitNotRunning, "not_running", not_running_message(path));
        if (err == EAGAIN || err == EINPROGRESS || err == ETIMEDOUT)
            return fail(kExitError, "timeout",
                        "mcpd did not accept the connection on " + path + " within " +
                            mcpd::format_duration(timeout) + " (is it stuck?)");
        return fail(kExitError, "connect",
                    "cannot connect to mcpd on " + path + ": " + std::strerror(err));
    }
    // Nothing leaves this process before the listener is known to be mcpd of a trusted user.
    const mcpd::Result<ListenerPolicy> policy =
        listener_policy(path, std::getenv("MCPD_SOCKET_OWNER"));
    if (!policy) return fail(kExitError, "impostor", policy.error());
    const std::optional<uid_t> listener = listener_uid(fd.get());
    if (!listener)
        return fail(kExitError, "impostor",
                    "cannot tell who listens on " + path + " (" + std::strerror(errno) +
                        "); refusing to talk to it");
    if (auto refusal = distrust(*listener, policy.value(), path))
        return fail(kExitError, "impostor", std::move(*refusal));
    fd_ = std::move(fd);
    return true;
}

bool DaemonClient::send(const nlohmann::json& request) {
    if (!fd_) return fail(kExitError, "io", "not connected to mcpd");
    const std::string line =
        request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + '\n';
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::send(fd_.get(), line.data() + done, line.size() - done, MSG_NOSIGNAL);
        if (n >= 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EPIPE || errno == ECONNRESET) {
            // mcpd answers a peer it refuses at once and hangs up: the answer is waiting.
            pollfd pending{fd_.get(), POLLIN, 0};
            if (::poll(&pending, 1, 0) == 1 && (pending.revents & POLLIN) != 0) return true;
            if (tunnel_failed()) return false;
            return fail(kExitError, "closed",
                        "mcpd closed the connection before reading the request (" + where_ + ")");
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return fail(kExitError, "timeout", "mcpd stopped reading requests (" + where_ + ")");
        return fail(kExitError, "io",
                    "cannot write to mcpd on " + where_ + ": " + std::strerror(errno));
    }
    return true;
}

bool DaemonClient::take_line(std::string& line) {
    const auto newline = buffer_.find('\n');
    if (newline == std::string::npos) return false;
    line.assign(buffer_, 0, newline);
    buffer_.erase(0, newline + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    return true;
}

DaemonClient::Read DaemonClient::read(nlohmann::json& message,
                                      std::optional<mcpd::Duration> timeout,
                                      const InterruptGuard* interrupt) {
    if (!fd_) {
        fail(kExitError, "io", "not connected to mcpd");
        return Read::failed;
    }
    std::optional<Clock::time_point> deadline;
    if (timeout) deadline = Clock::now() + *timeout;

    std::string line;
    while (!take_line(line)) {
        if (buffer_.size() > kMaxLineBytes) {
            fail(kExitError, "bad_reply", "mcpd sent a line longer than 64 MiB; giving up");
            return Read::failed;
        }
        if (interrupt && interrupt->fired()) return Read::interrupted;

        timespec wait{};
        if (deadline)
            wait = to_timespec(std::max(Clock::duration::zero(), *deadline - Clock::now()));
        pollfd pfd{fd_.get(), POLLIN, 0};
        const int ready = ::ppoll(&pfd, 1, deadline ? &wait : nullptr,
                                  interrupt ? &interrupt->wait_mask() : nullptr);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) {
            fail(kExitError, "io", std::string("waiting for mcpd failed: ") + std::strerror(errno));
            return Read::failed;
        }
        if (ready == 0) {
            fail(kExitError, "timeout",
                 "mcpd did not answer within " + mcpd::format_duration(*timeout) + " (" + where_ +
                     ")");
            return Read::failed;
        }

        char chunk[65536];
        const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0 && errno != ECONNRESET) {
            fail(kExitError, "io",
                 "cannot read from mcpd on " + where_ + ": " + std::strerror(errno));
            return Read::failed;
        }
        if (n <= 0) {
            fd_.reset();
            if (tunnel_failed()) return Read::failed;
            if (buffer_.empty()) {
                fail(kExitError, "closed", "mcpd closed the connection (" + where_ + ")");
                return Read::closed;
            }
            fail(kExitError, "closed",
                 "mcpd closed the connection in the middle of a reply (" + where_ + ")");
            return Read::failed;
        }
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }

    message = nlohmann::json::parse(line, nullptr, false);
    if (message.is_discarded() || !message.is_object()) {
        fail(kExitError, "bad_reply",
             "mcpd sent something that is not a JSON object: " + excerpt(line));
        return Read::failed;
    }
    return Read::message;
}

bool DaemonClient::call(const nlohmann::json& request, mcpd::control::Reply& reply,
                        std::optional<mcpd::Duration> timeout) {
    if (!send(request)) return false;
    nlohmann::json message;
    switch (read(message, timeout)) {
        case Read::message:
            break;
        case Read::closed:
            return fail(kExitError, "closed",
                        "mcpd closed the connection without answering (" + where_ + ")");
        case Read::interrupted:
        case Read::failed:
            return false;
    }
    mcpd::Result<mcpd::control::Reply> parsed = mcpd::control::parse_reply(message);
    if (!parsed)
        return fail(kExitError, "bad_reply", "mcpd sent a malformed reply: " + parsed.error());
    reply = std::move(parsed).value();
    return true;
}

bool DaemonClient::wait_closed(mcpd::Duration timeout) {
    const auto deadline = mcpd::Clock::now() + timeout;
    nlohmann::json ignored;
    Read result;
    do {
        const auto left = std::chrono::duration_cast<mcpd::Duration>(deadline - mcpd::Clock::now());
        result = read(ignored, std::max(left, mcpd::Duration::zero()));
    } while (result == Read::message);
    return result != Read::failed || error().code != "timeout";
}

}  // namespace mcpctl
