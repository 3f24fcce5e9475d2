#include "channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace bench {
namespace {

constexpr std::size_t kReadChunk = 256 * 1024;

void set_nonblocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

void wait_fd(int fd, short events, int timeout_ms, const char* what) {
    pollfd pfd{fd, events, 0};
    for (;;) {
        const int n = ::poll(&pfd, 1, timeout_ms);
        if (n > 0) return;
        if (n < 0 && errno == EINTR) continue;
        throw std::runtime_error(std::string("timed out ") + what);
    }
}

}  // namespace

Channel::Channel(int in_fd, int out_fd) : in_(in_fd), out_(out_fd) {
    set_nonblocking(in_);
    if (out_ != in_) set_nonblocking(out_);
}

Channel::~Channel() {
    if (out_ != in_ && out_ >= 0) ::close(out_);
    if (in_ >= 0) ::close(in_);
}

int Channel::connect_unix(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        ::close(fd);
        throw std::runtime_error("cannot connect to " + path + ": " + std::strerror(err));
    }
    return fd;
}

void Channel::send(std::string_view line, int timeout_ms) {
    queue(line);
    while (flush()) wait_fd(out_, POLLOUT, timeout_ms, "writing a message");
}

std::string_view Channel::read_line(int timeout_ms) {
    for (;;) {
        if (auto line = take_line()) return *line;
        if (eof_) throw std::runtime_error("the peer closed the stream");
        if (!fill() && !eof_) wait_fd(in_, POLLIN, timeout_ms, "waiting for a reply");
    }
}

void Channel::queue(std::string_view line) {
    output_.append(line);
    output_.append("\n");
}

bool Channel::flush() {
    while (!output_.empty()) {
        const std::string_view rest = output_.view();
        const ssize_t n = ::write(out_, rest.data(), rest.size());
        if (n > 0) {
            output_.consume(static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return true;
        throw std::runtime_error(std::string("write: ") + std::strerror(errno));
    }
    return false;
}

void Channel::close_write() {
    if (out_ != in_) {
        ::close(out_);
        out_ = -1;
    } else {
        ::shutdown(out_, SHUT_WR);
    }
}

bool Channel::fill() {
    // Drop the line handed out last before the buffer may move.
    input_.consume(pending_consume_);
    scanned_ -= pending_consume_;
    pending_consume_ = 0;
    for (;;) {
        const ssize_t n = ::read(in_, input_.tail(kReadChunk), kReadChunk);
        if (n > 0) {
            input_.commit(static_cast<std::size_t>(n));
            return true;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || errno != EAGAIN) eof_ = true;
        return false;
    }
}

std::optional<std::string_view> Channel::take_line() {
    input_.consume(pending_consume_);
    scanned_ -= pending_consume_;
    pending_consume_ = 0;
    const std::string_view all = input_.view();
    // memchr on an empty buffer's null data() is undefined, even for 0 bytes.
    const void* found = scanned_ < all.size()
                            ? std::memchr(all.data() + scanned_, '\n', all.size() - scanned_)
                            : nullptr;
    if (found == nullptr) {
        scanned_ = all.size();
        return std::nullopt;
    }
    const auto length = static_cast<std::size_t>(static_cast<const char*>(found) - all.data());
    pending_consume_ = length + 1;
    scanned_ = length + 1;
    return all.substr(0, length);
}

}  // namespace bench
