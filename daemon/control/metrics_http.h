// GET /metrics over HTTP ([daemon] metrics_listen, docs/STATS.md), served on mcpd's loop.
// Only a scraper that names this address in Host (no DNS rebinding) and holds the bearer token
// of metrics_token_file (metrics_access) is answered; then GET and HEAD of /metrics (a query
// string is ignored) answer 200 with the text `render` returns, any other path 404, any other
// method 405 with an Allow header. Every answer closes its connection. What a peer can hold is
// bounded: a request head of 8 KiB, 16 connections, and 10 s from accept to the last byte
// written, however slowly it sends or reads. A scrape never renders more than once a second
// (a second one within the second gets the same text), so scraping cannot slow the sessions
// that share the loop. Every socket is non-blocking and close-on-exec.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/listen_address.h"
#include "common/result.h"
#include "common/unique_fd.h"
#include "daemon/control/http_head.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/fd_watcher.h"

namespace mcpd {

// What a peer of the metrics endpoint may hold; tests shorten them.
struct MetricsHttpLimits {
    Duration deadline = std::chrono::seconds(10);  // from accept to the last byte written
    Duration render_every = std::chrono::seconds(1);
    std::size_t max_connections = 16;
};

class MetricsHttp {
public:
    // The body of a 200 answer: the metrics text at the moment of the request.
    using Render = std::function<std::string()>;

    static constexpr std::size_t kMaxHeadBytes = 8 * 1024;
    using Limits = MetricsHttpLimits;

    // Bind `address` (HOST:PORT, [V6]:PORT or PORT; common/listen_address.h) and serve on
    // `loop` until destroyed, to requests bearing `token`. The failure is a sentence naming
    // the address: a malformed one, or why it cannot be bound (transient when the system ran
    // short of descriptors or memory).
    static Result<std::unique_ptr<MetricsHttp>> listen(EventLoop& loop, std::string_view address,
                                                       std::string token, Render render,
                                                       Limits limits = Limits{});

    // The same on a socket already listening there (an upgrade in place kept it open).
    static Result<std::unique_ptr<MetricsHttp>> take_over(EventLoop& loop, UniqueFd listener,
                                                          std::string_view address,
                                                          std::string token, Render render,
                                                          Limits limits = Limits{});

    ~MetricsHttp();
    MetricsHttp(const MetricsHttp&) = delete;
    MetricsHttp& operator=(const MetricsHttp&) = delete;

    // Where it listens, with the port the system chose when port 0 was asked:
    // "127.0.0.1:9464", "[::1]:9464".
    const std::string& bound_address() const { return bound_address_; }
    // The token changed (a reload read the file again).
    void set_token(std::string token) { token_ = std::move(token); }
    // Connections open now.
    std::size_t connections() const { return connections_.size(); }
    // The listening socket (an upgrade in place keeps it open across the exec).
    int listening_fd() const { return listener_.get(); }

private:
    struct Connection {
        MetricsHttp* server = nullptr;
        std::uint64_t id = 0;
        BufferEvent bev;
        std::unique_ptr<Timer> deadline;
        bool answered = false;
    };

    MetricsHttp(EventLoop& loop, UniqueFd listener, ListenAddress bound, std::string token,
                Render render, Limits limits);
    void accept_all();
    static void on_read(bufferevent* bev, void* connection);
    static void on_write(bufferevent* bev, void* connection);
    static void on_event(bufferevent* bev, short what, void* connection);
    // The request head in `c`'s input is complete (or too long): answer it.
    void read_request(Connection& c);
    void answer(Connection& c, const HttpHead& head);
    void reply(Connection& c, int minor, int code, std::string_view reason,
               std::string_view extra_headers, std::string_view body, bool send_body = true);
    // The text to serve: rendered again at most once per limits_.render_every.
    const std::string& metrics();
    // Stop serving `c` now; it is freed on the next loop turn, outside its own callbacks.
    void close(Connection& c);

    EventLoop& loop_;
    Limits limits_;
    UniqueFd listener_;
    ListenAddress bound_;
    std::string bound_address_;
    std::string token_;
    Render render_;
    std::string rendered_;
    std::optional<TimePoint> rendered_at_;
    std::uint64_t next_id_ = 1;
    std::map<std::uint64_t, std::unique_ptr<Connection>> connections_;
    std::map<std::uint64_t, std::unique_ptr<Connection>> closed_;  // freed by sweep_
    Timer sweep_;
    Timer resume_accept_;  // after the system ran out of descriptors
    FdWatcher accepting_;
};

}  // namespace mcpd
