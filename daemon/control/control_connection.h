// One client connection on the control socket: request lines in, reply lines out.
//
// Requests are answered in order. A request whose answer comes later (start --wait) holds
// back the reading of further requests until it has been answered.
//
// A connection that is idle, waiting for a request line, is closed kIdleTimeout after it was
// accepted or last answered (a partial line does not count: a request is sent at once, in one
// piece). One that waits for mcpd (a reply deferred by --wait), carries a stream someone
// registered a cleanup for (followed logs, a session link) or was handed over never idles.
//
// A client that stops reading is cut off past kMaxQueuedOutput, or earlier by the daemon-wide
// OutputBudget when its queue is the largest while all clients together are over it.
#pragma once

#include <event2/bufferevent.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/line_reader.h"
#include "common/unique_fd.h"
#include "daemon/control/output_budget.h"
#include "daemon/control/peer_auth.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/fd_watcher.h"

namespace mcpd {

class ControlConnection;

// How long a connection may stay without a complete request before it is closed.
inline constexpr Duration kIdleTimeout = std::chrono::seconds(10);

class RequestHandler {
public:
    virtual ~RequestHandler() = default;
    virtual void handle_request(ControlConnection& connection, const nlohmann::json& request) = 0;
};

class ControlConnection {
public:
    // What waits in its output counts in `budget` until the connection closes or hands its
    // socket over.
    ControlConnection(event_base* base, UniqueFd fd, PeerCredentials peer, RequestHandler& handler,
                      OutputBudget& budget, std::function<void(ControlConnection&)> on_closed);
    ~ControlConnection();
    ControlConnection(const ControlConnection&) = delete;
    ControlConnection& operator=(const ControlConnection&) = delete;

    const PeerCredentials& peer() const { return peer_; }

    void reply_ok(const nlohmann::json& result);
    void reply_error(std::string_view code, const std::string& message,
                     const std::vector<std::string>& details = {});
    // A message that is not the reply to a request (a followed log line).
    void send(const nlohmann::json& message);

    // The handler will answer later: stop reading requests until it does.
    void defer_reply();
    // Answer with an error before any request (a refused peer), read nothing more, and close
    // once the answer is written (at the latest after kIdleTimeout).
    void refuse(std::string_view code, const std::string& message);
    // Close once everything queued has been written.
    void close_after_flush();
    // Runs when the connection goes away (unfollow logs, drop waiters); at once when it has
    // gone already (cut off while the request that registers it was being answered).
    void on_close(std::function<void()> cleanup);
    bool closed() const { return closed_; }

    // attach on the socket: give the bufferevent, with whatever it has buffered past the
    // request, to a session. The connection object then goes away without closing the socket.
    // Empty when the connection was cut off meanwhile (its reply did not fit).
    BufferEvent hand_over();
    // attach with pass_fds: receive the client's two descriptors (SCM_RIGHTS, through
    // common/fd_passing), then keep the connection only to notice when the client hangs up.
    // Nothing, once cut off.
    void receive_fds(std::function<void(std::vector<UniqueFd>)> on_fds,
                     std::function<void()> on_hangup);

private:
    static void on_read(bufferevent* bev, void* self);
    static void on_write(bufferevent* bev, void* self);
    static void on_event(bufferevent* bev, short what, void* self);
    void on_fds_ready();

    void process_input();
    void process_lines();
    // Run one request's handler, containing anything it throws to this request.
    void handle(const nlohmann::json& request);
    void reply_done();
    void write_line(const nlohmann::json& message);
    void write_error(std::string_view code, const std::string& message,
                     const std::vector<std::string>& details = {});
    void on_idle();
    // A client that stopped reading: say why in the log, and close.
    void cut_off(const std::string& reason);
    void close();

    BufferEvent bev_;  // empty once closed or handed over
    PeerCredentials peer_;
    RequestHandler& handler_;
    OutputBudget& budget_;
    OutputBudget::Account account_;
    std::function<void(ControlConnection&)> on_closed_;
    LineReader reader_;
    std::string line_;
    std::vector<std::function<void()>> cleanups_;
    enum class Mode { requests, awaiting_fds, linked, handed_over, refused };
    Mode mode_ = Mode::requests;
    Timer idle_;
    FdWatcher fd_watch_;  // while descriptors are awaited; after bev_, whose socket it watches
    std::function<void(std::vector<UniqueFd>)> on_fds_;
    std::function<void()> on_hangup_;
    bool reply_pending_ = false;
    bool processing_ = false;
    bool closing_ = false;
    bool closed_ = false;
};

}  // namespace mcpd
