#include "daemon/control/metrics_http.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "common/check.h"
#include "common/listen_address.h"
#include "common/metrics_text.h"
#include "common/unique_fd.h"

namespace mcpd {

namespace {

constexpr int kTimeoutSeconds = 10;
constexpr ev_ssize_t kMaxHeadersBytes = 8 * 1024;
constexpr ev_ssize_t kMaxBodyBytes = 4 * 1024;
constexpr int kBacklog = 64;
// Every method libevent parses: the others are answered 405 here, not by libevent without
// an Allow header.
constexpr ev_uint16_t kEveryMethod = EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                     EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                                     EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH;

// Whether trying again later may help: the system ran short, nothing is wrong with the address.
bool short_of_resources(int error) {
    return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

Failure socket_failure(const std::string& what, int error) {
    std::string sentence = "cannot serve metrics: " + what + ": " + std::strerror(error);
    if (error == EADDRINUSE)
        sentence +=
            " (another program listens there: choose another port for [daemon] "
            "metrics_listen, or stop that program)";
    else if (error == EADDRNOTAVAIL)
        sentence += " (no interface of this machine has that address)";
    else if (error == EACCES)
        sentence += " (ports below 1024 need privileges: choose a port from 1024 up)";
    return Failure{std::move(sentence), short_of_resources(error)};
}

// The socket address of `address`, and its length.
socklen_t to_sockaddr(const ListenAddress& address, sockaddr_storage& storage) {
    storage = {};
    if (address.ipv6) {
        auto& in6 = reinterpret_cast<sockaddr_in6&>(storage);
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons(address.port);
        MCPD_CHECK(inet_pton(AF_INET6, address.host.c_str(), &in6.sin6_addr) == 1,
                   "a parsed IPv6 listen address does not convert");
        return sizeof in6;
    }
    auto& in4 = reinterpret_cast<sockaddr_in&>(storage);
    in4.sin_family = AF_INET;
    in4.sin_port = htons(address.port);
    MCPD_CHECK(inet_pton(AF_INET, address.host.c_str(), &in4.sin_addr) == 1,
               "a parsed IPv4 listen address does not convert");
    return sizeof in4;
}

// A listening socket on `address`, non-blocking and close-on-exec; `address.port` becomes
// the port it got.
Result<UniqueFd> bind_listener(ListenAddress& address) {
    sockaddr_storage storage;
    const socklen_t length = to_sockaddr(address, storage);
    const std::string where = to_string(address);
    UniqueFd fd(::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd) return socket_failure("cannot create a socket for " + where, errno);
    const int on = 1;
    // A restarted mcpd gets its port back while the last scrape's connection is in TIME_WAIT.
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0)
        return socket_failure("cannot set SO_REUSEADDR on " + where, errno);
    // [::] means IPv6 only, as written; 0.0.0.0 is IPv4's.
    if (address.ipv6 && ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) != 0)
        return socket_failure("cannot set IPV6_V6ONLY on " + where, errno);
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&storage), length) != 0)
        return socket_failure("cannot bind " + where, errno);
    if (::listen(fd.get(), kBacklog) != 0)
        return socket_failure("cannot listen on " + where, errno);
    sockaddr_storage bound{};
    socklen_t bound_length = sizeof bound;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &bound_length) != 0)
        return socket_failure("cannot read the address of " + where, errno);
    address.port = ntohs(address.ipv6 ? reinterpret_cast<const sockaddr_in6&>(bound).sin6_port
                                      : reinterpret_cast<const sockaddr_in&>(bound).sin_port);
    return fd;
}

// A short text/plain answer.
void reply_text(evhttp_request* request, int code, const char* reason, std::string_view text) {
    evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type",
                      "text/plain; charset=utf-8");
    evbuffer_add(evhttp_request_get_output_buffer(request), text.data(), text.size());
    evhttp_send_reply(request, code, reason, nullptr);
}

}  // namespace

void MetricsHttp::FreeHttp::operator()(evhttp* http) const {
    evhttp_free(http);
}

Result<std::unique_ptr<MetricsHttp>> MetricsHttp::listen(EventLoop& loop, std::string_view address,
                                                         Render render) {
    Result<ListenAddress> parsed = parse_listen_address(address);
    if (!parsed) return parsed.failure();
    Result<UniqueFd> fd = bind_listener(parsed.value());
    if (!fd) return fd.failure();
    std::unique_ptr<MetricsHttp> server(
        new MetricsHttp(std::move(render), to_string(parsed.value())));
    evhttp* http = evhttp_new(loop.base());
    MCPD_CHECK(http != nullptr, "libevent could not allocate the metrics HTTP server");
    server->http_.reset(http);
    evhttp_set_allowed_methods(http, kEveryMethod);
    evhttp_set_timeout(http, kTimeoutSeconds);
    evhttp_set_max_headers_size(http, kMaxHeadersBytes);
    evhttp_set_max_body_size(http, kMaxBodyBytes);
    evhttp_set_gencb(http, &MetricsHttp::on_request, server.get());
    // Accepted connections are close-on-exec and non-blocking too (libevent's listener flags);
    // the listener closes the socket when the server is freed.
    if (evhttp_accept_socket_with_handle(http, fd->get()) == nullptr)
        return socket_failure("cannot accept connections on " + server->bound_address_, errno);
    fd->release();
    return server;
}

MetricsHttp::MetricsHttp(Render render, std::string bound_address)
    : render_(std::move(render)), bound_address_(std::move(bound_address)) {}

MetricsHttp::~MetricsHttp() = default;

void MetricsHttp::on_request(evhttp_request* request, void* self) {
    static_cast<const MetricsHttp*>(self)->answer(request);
}

void MetricsHttp::answer(evhttp_request* request) const {
    const evhttp_cmd_type method = evhttp_request_get_command(request);
    if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(request), "Allow", "GET, HEAD");
        reply_text(request, 405, "Method Not Allowed", "only GET and HEAD are answered here\n");
        return;
    }
    const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
    const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
    if (path == nullptr || std::string_view(path) != "/metrics") {
        reply_text(request, 404, "Not Found", "mcpd serves /metrics only\n");
        return;
    }
    std::string body;
    try {
        body = render_();
    } catch (const std::exception& e) {
        // A throw out of a libevent callback would end mcpd with every session.
        reply_text(request, 500, "Internal Server Error",
                   std::string("cannot render the metrics: ") + e.what() + "\n");
        return;
    }
    evkeyvalq* headers = evhttp_request_get_output_headers(request);
    evhttp_add_header(headers, "Content-Type", std::string(kMetricsContentType).c_str());
    if (method == EVHTTP_REQ_HEAD) {
        // The length a GET would get, and no body (libevent adds neither for HEAD).
        evhttp_add_header(headers, "Content-Length", std::to_string(body.size()).c_str());
    } else {
        evbuffer_add(evhttp_request_get_output_buffer(request), body.data(), body.size());
    }
    evhttp_send_reply(request, 200, "OK", nullptr);
}

}  // namespace mcpd
