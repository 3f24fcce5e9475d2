#include "daemon/control/metrics_http.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "common/check.h"
#include "common/metrics_text.h"
#include "daemon/control/metrics_access.h"
#include "daemon/control/tcp_listener.h"

namespace mcpd {

namespace {

constexpr Duration kRetryAccept = std::chrono::milliseconds(250);

}  // namespace

Result<std::unique_ptr<MetricsHttp>> MetricsHttp::listen(EventLoop& loop, std::string_view address,
                                                         std::string token, Render render,
                                                         Limits limits) {
    Result<ListenAddress> parsed = parse_listen_address(address);
    if (!parsed) return parsed.failure();
    Result<UniqueFd> fd = bind_tcp_listener(parsed.value(), "metrics_listen");
    if (!fd) return Failure{"cannot serve metrics: " + fd.error(), fd.transient()};
    return std::unique_ptr<MetricsHttp>(new MetricsHttp(loop, std::move(fd).value(),
                                                        std::move(parsed).value(), std::move(token),
                                                        std::move(render), limits));
}

Result<std::unique_ptr<MetricsHttp>> MetricsHttp::take_over(EventLoop& loop, UniqueFd listener,
                                                            std::string_view address,
                                                            std::string token, Render render,
                                                            Limits limits) {
    Result<ListenAddress> parsed = parse_listen_address(address);
    if (!parsed) return parsed.failure();
    if (Result<Done> port = read_bound_port(listener.get(), parsed.value(), "metrics_listen"); !port)
        return port.failure();
    return std::unique_ptr<MetricsHttp>(new MetricsHttp(loop, std::move(listener),
                                                        std::move(parsed).value(), std::move(token),
                                                        std::move(render), limits));
}

MetricsHttp::MetricsHttp(EventLoop& loop, UniqueFd listener, ListenAddress bound, std::string token,
                         Render render, Limits limits)
    : loop_(loop),
      limits_(limits),
      listener_(std::move(listener)),
      bound_(std::move(bound)),
      bound_address_(to_string(bound_)),
      token_(std::move(token)),
      render_(std::move(render)),
      sweep_(loop.base(), [this] { closed_.clear(); }),
      resume_accept_(loop.base(), [this] { accepting_.enable(); }),
      accepting_(loop.base(), listener_.get(), EV_READ | EV_PERSIST, [this] { accept_all(); }) {}

MetricsHttp::~MetricsHttp() = default;

void MetricsHttp::accept_all() {
    for (;;) {
        UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                // Out of descriptors: the listener would stay readable and spin the loop.
                accepting_.disable();
                resume_accept_.arm(kRetryAccept);
            }
            return;
        }
        // Past the cap a peer gets nothing but the close: scrapes come one at a time.
        if (connections_.size() >= limits_.max_connections) continue;
        BufferEvent bev = BufferEvent::over(loop_.base(), std::move(fd));
        if (!bev) continue;
        auto c = std::make_unique<Connection>();
        c->server = this;
        c->id = next_id_++;
        c->bev = std::move(bev);
        Connection* raw = c.get();
        c->deadline = std::make_unique<Timer>(loop_.base(), [this, raw] { close(*raw); });
        c->deadline->arm(limits_.deadline);
        // Reading stops at one byte past the head's limit, so a long head costs no more.
        bufferevent_setwatermark(raw->bev.get(), EV_READ, 0, kMaxHeadBytes + 1);
        bufferevent_setcb(raw->bev.get(), &MetricsHttp::on_read, &MetricsHttp::on_write,
                          &MetricsHttp::on_event, raw);
        bufferevent_enable(raw->bev.get(), EV_READ | EV_WRITE);
        connections_.emplace(raw->id, std::move(c));
    }
}

void MetricsHttp::on_read(bufferevent*, void* connection) {
    auto* c = static_cast<Connection*>(connection);
    c->server->read_request(*c);
}

void MetricsHttp::on_write(bufferevent*, void* connection) {
    auto* c = static_cast<Connection*>(connection);
    // Called when the output has drained: an answered connection is done.
    if (c->answered) c->server->close(*c);
}

void MetricsHttp::on_event(bufferevent*, short what, void* connection) {
    auto* c = static_cast<Connection*>(connection);
    if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) != 0) c->server->close(*c);
}

void MetricsHttp::read_request(Connection& c) {
    if (c.answered) return;
    evbuffer* input = c.bev.input();
    const std::size_t length = evbuffer_get_length(input);
    const auto* bytes = reinterpret_cast<const char*>(evbuffer_pullup(input, -1));
    const std::string_view received(bytes, length);
    const std::size_t end = http_head_end(received);
    if (end == std::string_view::npos || end > kMaxHeadBytes) {
        if (length > kMaxHeadBytes)
            reply(c, 1, 431, "Request Header Fields Too Large", {},
                  "the request head is longer than 8 KiB\n");
        return;  // more to come
    }
    const std::optional<HttpHead> head = parse_http_head(received.substr(0, end));
    if (!head) {
        reply(c, 1, 400, "Bad Request", {}, "this is not an HTTP/1.x request mcpd can read\n");
        return;
    }
    answer(c, *head);
}

void MetricsHttp::answer(Connection& c, const HttpHead& head) {
    if (!head.host || !host_names(*head.host, bound_)) {
        reply(c, head.minor, 421, "Misdirected Request", {},
              "the Host header must name this address, " + bound_address_ + "\n");
        return;
    }
    if (!head.authorization || !bearer_matches(*head.authorization, token_)) {
        reply(c, head.minor, 401, "Unauthorized", "WWW-Authenticate: Bearer realm=\"mcpd\"\r\n",
              "send the token of [daemon] metrics_token_file as \"Authorization: Bearer "
              "TOKEN\" (Prometheus: bearer_token_file)\n");
        return;
    }
    const bool head_only = head.method == "HEAD";
    if (head.method != "GET" && !head_only) {
        reply(c, head.minor, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n",
              "only GET and HEAD are answered here\n");
        return;
    }
    if (head.path != "/metrics") {
        reply(c, head.minor, 404, "Not Found", {}, "mcpd serves /metrics only\n");
        return;
    }
    std::string failed;
    try {
        const std::string& text = metrics();
        reply(c, head.minor, 200, "OK", {}, text, !head_only);
        return;
    } catch (const std::exception& e) {
        failed = e.what();
    }
    reply(c, head.minor, 500, "Internal Server Error", {},
          "cannot render the metrics: " + failed + "\n");
}

const std::string& MetricsHttp::metrics() {
    const TimePoint now = Clock::now();
    if (!rendered_at_ || now - *rendered_at_ >= limits_.render_every) {
        rendered_ = render_();
        rendered_at_ = now;
    }
    return rendered_;
}

void MetricsHttp::reply(Connection& c, int minor, int code, std::string_view reason,
                        std::string_view extra_headers, std::string_view body, bool send_body) {
    std::string head = "HTTP/1." + std::to_string(minor) + " " + std::to_string(code) + " ";
    head += reason;
    head += "\r\nContent-Type: ";
    head += code == 200 ? kMetricsContentType : std::string_view("text/plain; charset=utf-8");
    head += "\r\nContent-Length: " + std::to_string(body.size());
    head += "\r\nConnection: close\r\n";
    head += extra_headers;
    head += "\r\n";
    c.answered = true;
    bufferevent_disable(c.bev.get(), EV_READ);
    evbuffer* output = c.bev.output();
    evbuffer_add(output, head.data(), head.size());
    if (send_body) evbuffer_add(output, body.data(), body.size());
    // on_write closes it once written (within the deadline, or the deadline does).
}

void MetricsHttp::close(Connection& c) {
    const auto it = connections_.find(c.id);
    if (it == connections_.end()) return;
    c.bev.clear_callbacks();
    bufferevent_disable(c.bev.get(), EV_READ | EV_WRITE);
    c.deadline->cancel();
    closed_.insert(connections_.extract(it));
    sweep_.arm(Duration(0));
}

}  // namespace mcpd
