#include "raw_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "deadline.h"

namespace integration {

RawClient::RawClient(const std::string& socket_path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof addr.sun_path)
        throw std::runtime_error("socket path too long: " + socket_path);
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    // A Unix stream connect either completes or fails at once (EAGAIN: full backlog).
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        ::close(fd_);
        throw std::runtime_error("cannot connect to " + socket_path + ": " + std::strerror(err));
    }
}

void RawClient::close_input() { ::shutdown(fd_, SHUT_WR); }

RawClient::~RawClient() {
    if (fd_ >= 0) ::close(fd_);
}

std::size_t RawClient::send(std::string_view data, Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    std::size_t sent = 0;
    while (sent < data.size()) {
        const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) {
            pollfd pfd{fd_, POLLOUT, 0};
            const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
            if (ready == 0) break;  // the daemon stopped reading
            if ((pfd.revents & (POLLHUP | POLLERR)) != 0 && (pfd.revents & POLLOUT) == 0) break;
            continue;
        }
        break;  // EPIPE, ECONNRESET: the daemon closed the connection
    }
    return sent;
}

std::optional<std::string> RawClient::read_line(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        const auto newline = buffer_.find('\n');
        if (newline != std::string::npos) {
            std::string line = buffer_.substr(0, newline);
            buffer_.erase(0, newline + 1);
            return line;
        }
        if (eof_) return std::nullopt;
        pollfd pfd{fd_, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
        if (ready == 0) return std::nullopt;
        if (ready < 0) {
            if (errno == EINTR) continue;
            return std::nullopt;
        }
        char chunk[65536];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            eof_ = true;
        }
    }
}

bool RawClient::wait_closed(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!eof_) {
        buffer_.clear();
        if (!read_line(std::chrono::duration_cast<Duration>(deadline - Clock::now())) && !eof_)
            return false;
    }
    return true;
}

}  // namespace integration
