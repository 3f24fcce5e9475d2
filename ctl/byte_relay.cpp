#include "ctl/byte_relay.h"

#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

namespace mcpctl {

namespace {

constexpr std::size_t kChunk = 16 * 1024;

// Bytes read from one side and not yet written to the other.
class Pending {
public:
    explicit Pending(std::string_view first) : bytes_(first) { bytes_.reserve(kChunk); }

    bool empty() const { return done_ == bytes_.size(); }
    const char* data() const { return bytes_.data() + done_; }
    std::size_t size() const { return bytes_.size() - done_; }
    void consume(std::size_t n) {
        done_ += n;
        if (empty()) clear();
    }
    void clear() {
        bytes_.clear();
        done_ = 0;
    }
    // Read once with `read_fn(buffer, size)` into the emptied buffer; returns what it returned.
    template <typename ReadFn>
    ssize_t fill(ReadFn read_fn) {
        bytes_.resize(kChunk);
        const ssize_t n = read_fn(bytes_.data(), kChunk);
        const int err = errno;
        bytes_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        done_ = 0;
        errno = err;
        return n;
    }

private:
    std::string bytes_;
    std::size_t done_ = 0;
};

// Errors after which the same call may simply be tried again later.
bool transient(int err) {
    return err == EINTR || err == EAGAIN || err == EWOULDBLOCK;
}

// "cannot read standard input: Input/output error".
std::string failure(std::string_view what, int err) {
    return std::string(what) + ": " + std::strerror(err);
}

// Both directions and where each stands; step() does one poll() round.
class Relay {
public:
    Relay(const RelayEnds& ends, std::string_view pending_output)
        : ends_(ends), to_output_(pending_output), to_socket_({}) {}

    mcpd::Result<mcpd::Done> run() {
        for (;;) {
            if (failure_) return mcpd::permanent_failure(*failure_);
            if (!socket_open_ && to_output_.empty()) return mcpd::Done{};
            step();
        }
    }

private:
    // Wait until some side can move bytes (only sides with something to do are watched), then
    // move them; at the input's end, once its bytes are sent, shut the socket's write side.
    void step() {
        pollfd fds[3]{};
        nfds_t count = 0;
        pollfd* input = nullptr;
        pollfd* output = nullptr;
        pollfd* socket = nullptr;
        if (input_open_ && to_socket_.empty()) {
            input = &fds[count++];
            *input = {ends_.input, POLLIN, 0};
        }
        const short socket_events = static_cast<short>(
            (socket_open_ && to_output_.empty() ? POLLIN : 0) | (to_socket_.empty() ? 0 : POLLOUT));
        if (socket_events) {
            socket = &fds[count++];
            *socket = {ends_.socket, socket_events, 0};
        }
        if (!to_output_.empty()) {
            output = &fds[count++];
            *output = {ends_.output, POLLOUT, 0};
        }
        if (::poll(fds, count, -1) < 0) {
            if (errno != EINTR) fail(failure("poll failed", errno));
            return;
        }
        if (output && output->revents) write_output();
        if (socket && socket->revents) {
            if (!to_socket_.empty()) write_socket();
            if (socket_open_ && to_output_.empty() && (socket->revents & ~POLLOUT)) read_socket();
        }
        if (input && input->revents) read_input();
        if (!input_open_ && to_socket_.empty() && !write_shut_) {
            ::shutdown(ends_.socket, SHUT_WR);
            write_shut_ = true;
        }
    }

    void read_input() {
        const ssize_t n = to_socket_.fill(
            [&](char* buf, std::size_t len) { return ::read(ends_.input, buf, len); });
        if (n > 0) return;
        if (n < 0 && transient(errno)) return;
        if (n < 0) return fail(failure("cannot read standard input", errno));
        input_open_ = false;  // end of file: the agent is done sending
    }

    void write_socket() {
        const ssize_t n =
            ::send(ends_.socket, to_socket_.data(), to_socket_.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0) return to_socket_.consume(static_cast<std::size_t>(n));
        if (transient(errno)) return;
        if (errno == EPIPE || errno == ECONNRESET) {
            // mcpd stopped reading: the session is ending on its side. Drop what cannot be
            // delivered and keep writing out what it sent until it closes.
            to_socket_.clear();
            input_open_ = false;
            write_shut_ = true;
            return;
        }
        fail(failure("cannot write to mcpd", errno));
    }

    void read_socket() {
        const ssize_t n = to_output_.fill([&](char* buf, std::size_t len) {
            return ::recv(ends_.socket, buf, len, MSG_DONTWAIT);
        });
        if (n > 0) return;
        if (n < 0 && transient(errno)) return;
        if (n < 0 && errno == ECONNRESET)
            return fail("mcpd reset the connection, ending the session");
        if (n < 0) return fail(failure("cannot read from mcpd", errno));
        socket_open_ = false;
    }

    void write_output() {
        // A ready pipe takes PIPE_BUF bytes without blocking; more could block, and the
        // descriptor is the agent's, so it cannot be made non-blocking.
        const std::size_t len = std::min<std::size_t>(to_output_.size(), PIPE_BUF);
        const ssize_t n = ::write(ends_.output, to_output_.data(), len);
        if (n >= 0) return to_output_.consume(static_cast<std::size_t>(n));
        if (transient(errno)) return;
        fail(failure("cannot write to standard output", errno));
    }

    // The first failure ends the relay.
    void fail(std::string error) {
        if (!failure_) failure_ = std::move(error);
    }

    const RelayEnds ends_;
    Pending to_output_;
    Pending to_socket_;
    bool input_open_ = true;
    bool socket_open_ = true;
    bool write_shut_ = false;
    std::optional<std::string> failure_;
};

}  // namespace

mcpd::Result<mcpd::Done> relay_bytes(const RelayEnds& ends, std::string_view pending_output) {
    return Relay(ends, pending_output).run();
}

}  // namespace mcpctl
