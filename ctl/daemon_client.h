// A blocking connection to mcpd's control socket: one JSON object per line each way.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "common/control_protocol.h"
#include "common/duration.h"
#include "common/unique_fd.h"
#include "ctl/endpoint.h"
#include "ctl/interrupt.h"
#include "ctl/ssh_tunnel.h"

namespace mcpctl {

// What went wrong talking to the daemon, phrased for the user (without the "mcpctl: ").
struct ClientError {
    int exit_code = 1;
    std::string code;  // not_running, connect, impostor, closed, timeout, bad_reply, io
    std::string message;
};

// The sentence for a socket nobody listens on.
std::string not_running_message(const std::string& socket_path);

// A connection to a local socket, or through ssh to a remote one (see endpoint.h); both
// behave the same once connected.
class DaemonClient {
public:
    explicit DaemonClient(Endpoint endpoint)
        : endpoint_(std::move(endpoint)), where_(endpoint_.describe()) {}
    explicit DaemonClient(std::string socket_path)
        : DaemonClient(Endpoint{std::move(socket_path), std::nullopt, {}}) {}

    // Connect, waiting at most `timeout` when the daemon's backlog is full. For a remote
    // endpoint this starts ssh; a failed login shows up as an error of the first read.
    bool connect(mcpd::Duration timeout = std::chrono::seconds(5));

    // Write one request line.
    bool send(const nlohmann::json& request);

    enum class Read { message, closed, interrupted, failed };
    // Read the next message, waiting up to `timeout` (forever when nullopt). `closed` is an
    // end of stream between messages; one in the middle of a line is a failure. With a guard,
    // a SIGINT during the wait returns `interrupted`.
    Read read(nlohmann::json& message, std::optional<mcpd::Duration> timeout,
              const InterruptGuard* interrupt = nullptr);

    // Read and drop messages until mcpd closes the connection, however it ends (an exit, an
    // exec, a reset); false when `timeout` ran out first (error() then says so).
    bool wait_closed(mcpd::Duration timeout);

    // send, then read the one reply (waiting forever when `timeout` is nullopt), checked to be
    // well formed; a close before it is a failure.
    bool call(const nlohmann::json& request, mcpd::control::Reply& reply,
              std::optional<mcpd::Duration> timeout);

    // For a connection that stops carrying lines (attach): its descriptor (-1 once closed), and
    // the bytes read past the last line returned, which are then no longer buffered here.
    int fd() const { return fd_.get(); }
    std::string take_buffered() { return std::exchange(buffer_, {}); }
    // Return bytes taken with take_buffered(), to be read as lines again.
    void put_back(std::string bytes) { buffer_ = std::move(bytes) + buffer_; }

    const ClientError& error() const { return error_; }
    // The socket path or ssh:// URL, for messages.
    const std::string& where() const { return where_; }
    bool remote() const { return endpoint_.remote(); }

private:
    bool fail(int exit_code, std::string code, std::string message);
    // When the connection ended because ssh or the remote mcpctl failed, record why.
    bool tunnel_failed();
    // Move one complete line out of buffer_, if there is one.
    bool take_line(std::string& line);

    Endpoint endpoint_;
    std::string where_;
    SshTunnel tunnel_;  // declared before fd_: the connection closes first, then ssh is reaped
    mcpd::UniqueFd fd_;
    std::string buffer_;
    ClientError error_;
};

}  // namespace mcpctl
