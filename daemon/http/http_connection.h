// One HTTP/1.1 connection of the MCP front door: reads one request at a time (head and a body
// of Content-Length bytes, both bounded and under one deadline), hands it to its owner, and
// writes the answer the owner gives: a whole response, or a chunked stream (SSE) written piece
// by piece. While an answer is pending the connection is still read, so a client that goes
// away is noticed at once (a closed SSE stream cancels its request); bytes of a next request
// wait until the answer is complete. Kept alive between requests unless either side says
// otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "daemon/control/http_message.h"
#include "daemon/http/http_carry.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/fd_watcher.h"

namespace mcpd {

struct HttpRequest {
    HttpRequestHead head;
    std::string body;
};

struct HttpConnectionLimits {
    std::size_t max_head_bytes = 16 * 1024;
    std::size_t max_body_bytes = 16 * 1024 * 1024;
    // For a request's head and body to arrive, and for a kept-alive connection to be idle.
    Duration request_timeout = std::chrono::seconds(30);
    // Bytes waiting for a client that does not read; past it the connection is closed.
    std::size_t max_queued_bytes = 4 * 1024 * 1024;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

class HttpConnection {
public:
    struct Handler {
        // A whole request: answer it with respond() or open_stream(), now or later. The request
        // is the connection's until the call returns: a handler that answers later keeps what
        // it needs of it.
        std::function<void(HttpConnection&, HttpRequest& request)> on_request;
        // The connection is gone (the client closed it, a deadline, an error, or close()).
        // Called once; the owner frees the connection on a later turn.
        std::function<void(HttpConnection&)> on_closed;
    };

    HttpConnection(std::uint64_t id, event_base* base, BufferEvent bev, HttpConnectionLimits limits,
                   Handler handler);
    ~HttpConnection();
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    std::uint64_t id() const { return id_; }
    int fd() const { return bev_ ? bev_.fd() : -1; }
    bool closed() const { return closed_; }
    // A request was handed over and its answer is not complete.
    bool answering() const { return answering_; }

    void respond(int status, const HttpHeaders& headers, std::string_view body);
    // The same with the status line and headers already built (http_response_head): an
    // answer that repeats them goes out in three pieces, no string made for it.
    void respond_with_head(int status, std::string_view head, std::string_view body);
    // The head of a chunked answer; stream() sends its pieces, end_stream() its end.
    void open_stream(int status, const HttpHeaders& headers);
    // False when the connection is gone (nothing was written).
    bool stream(std::string_view bytes);
    void end_stream();
    bool streaming() const { return streaming_; }
    void close();

    // An upgrade in place (docs/UPGRADE.md). While input is held nothing is read from the
    // client (what it sends waits in its socket); while output is held nothing is written to
    // it (what it is sent waits in the output buffer).
    void hold_input(bool held);
    void hold_output(bool held);
    // Its state with every byte read and not taken, and every byte not yet sent (`listener`
    // left for the owner to fill in).
    CarriedHttpConnection carried() const;
    // In the new process, right after construction over the carried descriptor: goes on from
    // `carried` (a request whose head or body was on its way is read on).
    void resume(const CarriedHttpConnection& carried);

private:
    void on_readable();
    static void on_write(bufferevent* bev, void* self);
    static void on_event(bufferevent* bev, short what, void* self);
    // Parse what was received into a request when it is whole.
    void take_request();
    // An answer is complete: the next request, or the close.
    void answered();
    // A request that cannot be read: answer `status` with `why`, then close.
    void refuse(int status, const std::string& why);
    bool write(std::string_view bytes) {
        return write(std::span<const std::string_view>(&bytes, 1));
    }
    bool write(std::span<const std::string_view> pieces);

    std::uint64_t id_;
    HttpConnectionLimits limits_;
    Handler handler_;
    BufferEvent bev_;
    FdWatcher reader_;  // reads the socket (on_readable); the bufferevent only writes
    // request_timeout after the connection opened or its last answer; each answer postpones
    // it, so a kept connection's requests cost no timer operation.
    Timer deadline_;
    Timer next_;  // reads a request that came while the last was answered, on the next turn
    std::string received_;
    // How far received_ was looked through for a head's end (request_head_end's `from`).
    std::size_t head_searched_ = 0;
    // The request being handed out, kept between requests so that its head's copy, its header
    // table and its body are not allocated again for each (a large body is given back).
    HttpRequest request_;
    bool answering_ = false;
    bool streaming_ = false;
    bool keep_alive_ = true;
    bool close_after_write_ = false;
    bool closed_ = false;
    bool held_ = false;
    bool next_close_ = false;  // resumed with nothing left to write before its close
};

}  // namespace mcpd
