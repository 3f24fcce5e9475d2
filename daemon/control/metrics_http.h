// GET /metrics over HTTP ([daemon] metrics_listen, docs/STATS.md), served on mcpd's loop by
// libevent's own HTTP server. GET and HEAD of /metrics (a query string is ignored) answer 200
// with the text `render` returns; any other path is 404, any other method 405 with an Allow
// header. Requests are small (8 KiB of headers, 4 KiB of body) and a connection that sends or
// reads nothing for 10 s is closed, so a slow client holds nothing for long; every socket is
// non-blocking and close-on-exec.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "daemon/io/event_loop.h"

struct evhttp;
struct evhttp_request;

namespace mcpd {

class MetricsHttp {
public:
    // The body of a 200 answer: the metrics text at the moment of the request.
    using Render = std::function<std::string()>;

    // Bind `address` (HOST:PORT, [V6]:PORT or PORT; common/listen_address.h) and serve on
    // `loop` until destroyed. The failure is a sentence naming the address: a malformed one,
    // or why it cannot be bound (transient when the system ran short of descriptors or memory).
    static Result<std::unique_ptr<MetricsHttp>> listen(EventLoop& loop, std::string_view address,
                                                       Render render);

    ~MetricsHttp();
    MetricsHttp(const MetricsHttp&) = delete;
    MetricsHttp& operator=(const MetricsHttp&) = delete;

    // Where it listens, with the port the system chose when port 0 was asked:
    // "127.0.0.1:9464", "[::1]:9464".
    const std::string& bound_address() const { return bound_address_; }

private:
    struct FreeHttp {
        void operator()(evhttp* http) const;
    };

    MetricsHttp(Render render, std::string bound_address);
    static void on_request(evhttp_request* request, void* self);
    void answer(evhttp_request* request) const;

    Render render_;
    std::string bound_address_;
    // Last, so it goes first: its callbacks never see the members above destroyed.
    std::unique_ptr<evhttp, FreeHttp> http_;
};

}  // namespace mcpd
