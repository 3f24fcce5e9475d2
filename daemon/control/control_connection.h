// One client connection on the control socket: request lines in, reply lines out.
//
// Requests are answered in order. A request whose answer comes later (start --wait) holds
// back the reading of further requests until it has been answered.
//
// A connection that is idle, waiting for a request line, is closed its idle timeout
// ([daemon] control_idle_timeout) after it was accepted or last answered, whoever its peer is
// (a partial line does not count: a request is sent at once, in one piece). One that waits for
// mcpd (a reply deferred by --wait), carries a stream someone registered a cleanup for
// (followed logs, a session link) or was handed over never idles. An idle one may also be
// closed earlier, to make way for another connection (close_to_make_way).
//
// A client that stops reading is cut off past kMaxQueuedOutput, or earlier by the daemon-wide
// OutputBudget when its queue is the largest while all clients together are over it.
#pragma once

#include <event2/bufferevent.h>

#include <functional>
#include <nlohmann/json.hpp>
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

class RequestHandler {
public:
    virtual ~RequestHandler() = default;
    virtual void handle_request(ControlConnection& connection, const nlohmann::json& request) = 0;
};

class ControlConnection {
public:
    // What waits in its output counts in `budget` until the connection closes or hands its
    // socket over. `idle_timeout`: how long it may stay without a complete request.
    ControlConnection(event_base* base, UniqueFd fd, PeerCredentials peer, RequestHandler& handler,
                      OutputBudget& budget, Duration idle_timeout,
                      std::function<void(ControlConnection&)> on_closed);
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
    // once the answer is written (at the latest after the idle timeout).
    void refuse(std::string_view code, const std::string& message);
    // Close once everything queued has been written.
    void close_after_flush();
    // Write what is queued now, waiting up to `limit` for the socket to take it: the last
    // reply before the process is replaced (an upgrade in place). Whether all of it went.
    bool flush_now(Duration limit);
    // Runs when the connection goes away (unfollow logs, drop waiters); at once when it has
    // gone already (cut off while the request that registers it was being answered).
    void on_close(std::function<void()> cleanup);
    bool closed() const { return closed_; }
    // Waiting for a request and owed nothing: what the idle timeout would close.
    bool idle() const;
    // It follows something that lasts (a `logs -f`, a `--wait`, a passed session it is linked
    // to): something is done when it goes.
    bool follows() const { return !cleanups_.empty(); }
    // Idle, with no request waiting in its socket (one accepted in the same burst as others
    // may not have been read yet) and no answer waiting to be written: what may be closed to
    // make way.
    bool idle_and_silent() const;
    // Since when it has been idle (accepted or last answered); meaningful while idle().
    TimePoint idle_since() const { return idle_since_; }
    // Close an idle_and_silent() connection now, its descriptor with it, to make way for
    // another: a `limit` error saying `why` is written if the socket takes it at once, never
    // waited for. Does nothing to any other.
    void close_to_make_way(const std::string& why);

    // attach on the socket: give the bufferevent, with whatever it has buffered past the
    // request, to a session. The connection object then goes away without closing the socket.
    // Empty when the connection was cut off meanwhile (its reply did not fit).
    BufferEvent hand_over();
    // attach with pass_fds: receive the client's two descriptors (SCM_RIGHTS, through
    // common/fd_passing), then keep the connection only to notice when the client hangs up.
    // Nothing, once cut off.
    void receive_fds(std::function<void(std::vector<UniqueFd>)> on_fds,
                     std::function<void()> on_hangup);
    // An upgrade in place: the link of a passed session carried across the exec, linked as it
    // was (only its hang-up matters), from the moment it is made.
    void link_carried(std::function<void()> on_hangup);
    // Its socket; -1 once closed or handed over.
    int fd() const { return bev_ != nullptr ? bev_.fd() : -1; }
    // Linked to a passed session (receive_fds had its descriptors).
    bool linked() const { return mode_ == Mode::linked; }
    // Bytes waiting to be written to the client, and whether a request line has been begun.
    std::size_t queued_output() const;
    bool reading_request() const { return reader_.buffered() > 0; }

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
    // (Re)start the idle clock.
    void arm_idle();
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
    Duration idle_timeout_;
    Timer idle_;
    TimePoint idle_since_;
    FdWatcher fd_watch_;  // while descriptors are awaited; after bev_, whose socket it watches
    std::function<void(std::vector<UniqueFd>)> on_fds_;
    std::function<void()> on_hangup_;
    bool reply_pending_ = false;
    bool processing_ = false;
    bool closing_ = false;
    bool closed_ = false;
};

}  // namespace mcpd
