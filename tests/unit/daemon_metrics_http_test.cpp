// GET /metrics over a real loopback socket: who is answered (the bearer token,
// a Host naming the endpoint), what each method and path is answered, the bounds
// a peer meets (head size, connections, a total deadline, one render a second),
// the bound address, and the listener's own hygiene (close-on-exec, a port in
// use, freed on destruction).
#include <arpa/inet.h>
#include <dirent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>
#include <thread>

#include "common/listen_address.h"
#include "common/unique_fd.h"
#include "daemon/control/metrics_http.h"

using mcpd::EventLoop;
using mcpd::MetricsHttp;
using mcpd::UniqueFd;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kScrapeToken = "s3cret-token";

constexpr std::string_view kText =
    "# HELP mcpd_up Whether mcpd answered: always 1.\n"
    "# TYPE mcpd_up gauge\nmcpd_up 1\n";

std::uint16_t port_of(const MetricsHttp& server) {
    const auto address = mcpd::parse_listen_address(server.bound_address());
    REQUIRE(address.ok());
    return address->port;
}

// A blocking TCP connection to 127.0.0.1:port, reads giving up after 5 s; empty
// on refusal.
UniqueFd connect_loopback(std::uint16_t port) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(fd);
    const timeval timeout{5, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
        return UniqueFd();
    return fd;
}

// Send `request` and read until the server closes, on a thread, while `loop`
// turns here.
std::string exchange(EventLoop& loop, std::uint16_t port, const std::string& request) {
    std::atomic<bool> done{false};
    std::string response;
    std::thread client([&] {
        UniqueFd fd = connect_loopback(port);
        if (fd) {
            ::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL);
            char buffer[4096];
            ssize_t n;
            while ((n = ::recv(fd.get(), buffer, sizeof buffer, 0)) > 0)
                response.append(buffer, static_cast<std::size_t>(n));
        }
        done = true;
    });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done && std::chrono::steady_clock::now() < deadline) {
        event_base_loop(loop.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
        std::this_thread::sleep_for(1ms);
    }
    client.join();
    return response;
}

// A request with `headers` (each ending in CR LF) and nothing else.
std::string http_request_text(const std::string& method, const std::string& target,
                              const std::string& headers) {
    return method + " " + target + " HTTP/1.1\r\n" + headers + "Connection: close\r\n\r\n";
}

std::string host_of(std::uint16_t port) {
    return "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
}

std::string bearer(std::string_view token = kScrapeToken) {
    return "Authorization: Bearer " + std::string(token) + "\r\n";
}

// A request as a scraper sends it: its Host and the token.
std::string get(EventLoop& loop, std::uint16_t port, const std::string& method,
                const std::string& target) {
    return exchange(loop, port, http_request_text(method, target, host_of(port) + bearer()));
}

// Turn `loop` until `done` or 10 s.
void turn_until(EventLoop& loop, const std::atomic<bool>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done && std::chrono::steady_clock::now() < deadline) {
        event_base_loop(loop.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
        std::this_thread::sleep_for(1ms);
    }
}

std::string status_line(const std::string& response) {
    return response.substr(0, response.find("\r\n"));
}

std::string body_of(const std::string& response) {
    const std::size_t end = response.find("\r\n\r\n");
    return end == std::string::npos ? std::string() : response.substr(end + 4);
}

bool has_header(const std::string& response, const std::string& line) {
    const std::string head = response.substr(0, response.find("\r\n\r\n") + 2);
    return head.find("\r\n" + line + "\r\n") != std::string::npos;
}

struct Served {
    EventLoop loop;
    int renders = 0;
    std::unique_ptr<MetricsHttp> server;

    explicit Served(std::string_view address = "127.0.0.1:0", MetricsHttp::Limits limits = {}) {
        auto result = MetricsHttp::listen(
            loop, address, std::string(kScrapeToken),
            [this] {
                ++renders;
                return std::string(kText);
            },
            limits);
        INFO((result ? "" : result.error()));
        REQUIRE(result.ok());
        server = std::move(result).value();
    }
    std::uint16_t port() const { return port_of(*server); }
};

}  // namespace

TEST_CASE("GET /metrics answers the rendered text as Prometheus text 0.0.4", "[metrics_http]") {
    Served served;
    const std::string response = get(served.loop, served.port(), "GET", "/metrics");
    CHECK(status_line(response) == "HTTP/1.1 200 OK");
    CHECK(has_header(response, "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
    CHECK(has_header(response, "Content-Length: " + std::to_string(kText.size())));
    CHECK(body_of(response) == kText);
    CHECK(served.renders == 1);

    // A query string is ignored.
    const std::string query = get(served.loop, served.port(), "GET", "/metrics?name[]=x&y");
    CHECK(status_line(query) == "HTTP/1.1 200 OK");
    CHECK(body_of(query) == kText);
    // HTTP/1.0 is answered in kind; every answer closes its connection.
    const std::string old =
        exchange(served.loop, served.port(),
                 "GET /metrics HTTP/1.0\r\n" + host_of(served.port()) + bearer() + "\r\n");
    CHECK(status_line(old) == "HTTP/1.0 200 OK");
    CHECK(has_header(old, "Connection: close"));
    CHECK(body_of(old) == kText);
}

TEST_CASE(
    "a request without the token, or with another, is 401 and renders "
    "nothing",
    "[metrics_http]") {
    Served served;
    const std::string host = host_of(served.port());
    for (const std::string& authorization :
         {std::string(), bearer("wrong"), bearer(std::string(kScrapeToken) + "x"),
          bearer(kScrapeToken.substr(0, kScrapeToken.size() - 1)), bearer(""),
          "Authorization: Basic " + std::string(kScrapeToken) + "\r\n",
          "Authorization: " + std::string(kScrapeToken) + "\r\n"}) {
        INFO(authorization);
        for (const char* method : {"GET", "HEAD", "POST"}) {
            const std::string response =
                exchange(served.loop, served.port(),
                         http_request_text(method, "/metrics", host + authorization));
            CHECK(status_line(response) == "HTTP/1.1 401 Unauthorized");
            CHECK(has_header(response, "WWW-Authenticate: Bearer realm=\"mcpd\""));
            CHECK(body_of(response).find("mcpd_up") == std::string::npos);
        }
        // Another path says nothing either about what is served.
        CHECK(status_line(exchange(served.loop, served.port(),
                                   http_request_text("GET", "/other", host + authorization))) ==
              "HTTP/1.1 401 Unauthorized");
    }
    CHECK(served.renders == 0);
    // The scheme's case does not matter; the token's does.
    CHECK(status_line(exchange(served.loop, served.port(),
                               http_request_text("GET", "/metrics",
                                                 host + "Authorization: bearer " +
                                                     std::string(kScrapeToken) + "\r\n"))) ==
          "HTTP/1.1 200 OK");
    CHECK(status_line(
              exchange(served.loop, served.port(),
                       http_request_text("GET", "/metrics", host + bearer("S3CRET-TOKEN")))) ==
          "HTTP/1.1 401 Unauthorized");
    // A new token (a reload read the file again) replaces the old one.
    served.server->set_token("next-token");
    CHECK(status_line(get(served.loop, served.port(), "GET", "/metrics")) ==
          "HTTP/1.1 401 Unauthorized");
    CHECK(
        status_line(exchange(served.loop, served.port(),
                             http_request_text("GET", "/metrics", host + bearer("next-token")))) ==
        "HTTP/1.1 200 OK");
}

TEST_CASE("a Host that does not name the endpoint is refused (DNS rebinding)", "[metrics_http]") {
    Served served;
    const std::string port = std::to_string(served.port());
    const std::string other = std::to_string(served.port() == 1 ? 2 : 1);
    for (const std::string& host : std::vector<std::string>{
             std::string(), "Host: attacker.example:" + port + "\r\n", "Host: attacker.example\r\n",
             "Host: 127.0.0.1:" + other + "\r\n", "Host: 127.0.0.2:" + port + "\r\n",
             "Host: 127.0.0.1\r\n", "Host: [::1]:" + port + "\r\n",
             "Host: 127.0.0.1:" + port + "x\r\n"}) {
        INFO(host);
        const std::string response = exchange(
            served.loop, served.port(), http_request_text("GET", "/metrics", host + bearer()));
        CHECK(status_line(response) == "HTTP/1.1 421 Misdirected Request");
        CHECK(body_of(response) ==
              "the Host header must name this address, " + served.server->bound_address() + "\n");
    }
    CHECK(served.renders == 0);
    // Host given twice is not read at all.
    CHECK(status_line(exchange(served.loop, served.port(),
                               http_request_text("GET", "/metrics",
                                                 host_of(served.port()) + host_of(served.port()) +
                                                     bearer()))) == "HTTP/1.1 400 Bad Request");
    // localhost names a loopback address.
    CHECK(status_line(exchange(served.loop, served.port(),
                               http_request_text("GET", "/metrics",
                                                 "Host: LocalHost:" + port + "\r\n" + bearer()))) ==
          "HTTP/1.1 200 OK");
}

TEST_CASE("a connection is cut at its total deadline however it trickles", "[metrics_http]") {
    MetricsHttp::Limits limits;
    limits.deadline = 300ms;
    Served served("127.0.0.1:0", limits);
    std::atomic<bool> done{false};
    std::chrono::milliseconds lasted{};
    std::string received;
    std::thread client([&] {
        UniqueFd fd = connect_loopback(served.port());
        const auto start = std::chrono::steady_clock::now();
        // One byte of a valid head every 20 ms: never idle, never finished.
        const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: " + std::string(4000, 'a');
        for (const char byte : head) {
            if (::send(fd.get(), &byte, 1, MSG_NOSIGNAL) != 1) break;
            char buffer[256];
            const ssize_t n = ::recv(fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) break;
            if (n > 0) received.append(buffer, static_cast<std::size_t>(n));
            std::this_thread::sleep_for(20ms);
        }
        lasted = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
        done = true;
    });
    turn_until(served.loop, done);
    client.join();
    CHECK(lasted >= 250ms);
    CHECK(lasted < 3s);  // the whole head would take 80 s
    CHECK(received.empty());
    CHECK(served.renders == 0);
    for (int i = 0; i < 100 && served.server->connections() != 0; ++i) {
        event_base_loop(served.loop.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
        std::this_thread::sleep_for(1ms);
    }
    CHECK(served.server->connections() == 0);
}

TEST_CASE("past its connection cap a peer is closed at once, and scrapes go on", "[metrics_http]") {
    MetricsHttp::Limits limits;
    limits.max_connections = 2;
    limits.deadline = 500ms;
    Served served("127.0.0.1:0", limits);
    UniqueFd first = connect_loopback(served.port());
    UniqueFd second = connect_loopback(served.port());
    REQUIRE(first);
    REQUIRE(second);
    for (int i = 0; i < 200 && served.server->connections() < 2; ++i) {
        event_base_loop(served.loop.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
        std::this_thread::sleep_for(1ms);
    }
    REQUIRE(served.server->connections() == 2);
    // A third, while two idle ones are held: answered with a close, nothing else.
    const std::string refused =
        exchange(served.loop, served.port(),
                 http_request_text("GET", "/metrics", host_of(served.port()) + bearer()));
    CHECK(refused.empty());
    CHECK(served.server->connections() == 2);
    // The idle ones go at their deadline; then a scrape is answered.
    std::this_thread::sleep_for(600ms);
    for (int i = 0; i < 100; ++i) {
        event_base_loop(served.loop.base(), EVLOOP_ONCE | EVLOOP_NONBLOCK);
        std::this_thread::sleep_for(1ms);
    }
    CHECK(served.server->connections() == 0);
    char byte;
    CHECK(::recv(first.get(), &byte, 1, 0) == 0);
    CHECK(status_line(get(served.loop, served.port(), "GET", "/metrics")) == "HTTP/1.1 200 OK");
}

TEST_CASE("scrapes within a second share one render", "[metrics_http]") {
    Served served;
    for (int i = 0; i < 5; ++i)
        CHECK(body_of(get(served.loop, served.port(), "GET", "/metrics")) == kText);
    CHECK(served.renders == 1);
    MetricsHttp::Limits every_time;
    every_time.render_every = 0ms;
    Served eager("127.0.0.1:0", every_time);
    get(eager.loop, eager.port(), "GET", "/metrics");
    get(eager.loop, eager.port(), "GET", "/metrics");
    CHECK(eager.renders == 2);
}

TEST_CASE("HEAD /metrics answers the headers of a GET and no body", "[metrics_http]") {
    Served served;
    const std::string response = get(served.loop, served.port(), "HEAD", "/metrics");
    CHECK(status_line(response) == "HTTP/1.1 200 OK");
    CHECK(has_header(response, "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
    CHECK(has_header(response, "Content-Length: " + std::to_string(kText.size())));
    CHECK(body_of(response).empty());
}

TEST_CASE("another method is 405 with Allow, another path 404", "[metrics_http]") {
    Served served;
    for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH"}) {
        INFO(method);
        const std::string response = get(served.loop, served.port(), method, "/metrics");
        CHECK(status_line(response) == "HTTP/1.1 405 Method Not Allowed");
        CHECK(has_header(response, "Allow: GET, HEAD"));
    }
    for (const char* path : {"/", "/other", "/metrics/", "/metricsx", "/Metrics", "/metrics/x"}) {
        INFO(path);
        const std::string response = get(served.loop, served.port(), "GET", path);
        CHECK(status_line(response) == "HTTP/1.1 404 Not Found");
        CHECK(body_of(response) == "mcpd serves /metrics only\n");
    }
    CHECK(served.renders == 0);
}

TEST_CASE("oversized headers are refused and the server goes on answering", "[metrics_http]") {
    Served served;
    const std::string huge = "GET /metrics HTTP/1.1\r\n" + host_of(served.port()) + bearer() +
                             "X-Filler: " + std::string(16 * 1024, 'a') +
                             "\r\nConnection: close\r\n\r\n";
    const std::string refused = exchange(served.loop, served.port(), huge);
    CHECK_FALSE(refused.starts_with("HTTP/1.1 200"));
    if (!refused.empty())
        CHECK(status_line(refused) == "HTTP/1.1 431 Request Header Fields Too Large");
    CHECK(served.renders == 0);
    CHECK(status_line(get(served.loop, served.port(), "GET", "/metrics")) == "HTTP/1.1 200 OK");
}

TEST_CASE("port 0 binds a free port, which bound_address names", "[metrics_http]") {
    Served served;
    CHECK(served.server->bound_address().starts_with("127.0.0.1:"));
    CHECK(served.port() != 0);

    Served bare("0");  // a bare port is 127.0.0.1's
    CHECK(bare.server->bound_address().starts_with("127.0.0.1:"));
    CHECK(bare.port() != 0);
    CHECK(status_line(get(bare.loop, bare.port(), "GET", "/metrics")) == "HTTP/1.1 200 OK");
}

TEST_CASE("the listening socket is close-on-exec and goes with the server", "[metrics_http]") {
    auto served = std::make_unique<Served>();
    const std::uint16_t port = served->port();
    int listening = -1;
    DIR* fds = ::opendir("/proc/self/fd");
    REQUIRE(fds != nullptr);
    while (const dirent* entry = ::readdir(fds)) {
        const int fd = std::atoi(entry->d_name);
        sockaddr_in address{};
        socklen_t length = sizeof address;
        if (entry->d_name[0] == '.' || fd == ::dirfd(fds)) continue;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
            address.sin_family == AF_INET && ntohs(address.sin_port) == port)
            listening = fd;
    }
    ::closedir(fds);
    REQUIRE(listening >= 0);
    CHECK((::fcntl(listening, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK((::fcntl(listening, F_GETFL) & O_NONBLOCK) != 0);

    served.reset();
    CHECK_FALSE(connect_loopback(port));
}

TEST_CASE("an address in use or malformed is a sentence naming it", "[metrics_http]") {
    Served first;
    EventLoop loop;
    const std::string taken = first.server->bound_address();
    const auto in_use = MetricsHttp::listen(loop, taken, "t", [] { return std::string(); });
    REQUIRE_FALSE(in_use.ok());
    CHECK(in_use.error() == "cannot serve metrics: cannot bind " + taken + ": " +
                                std::strerror(EADDRINUSE) +
                                " (another program listens there: choose another port for "
                                "[daemon] metrics_listen, or stop that program)");
    CHECK_FALSE(in_use.transient());

    const auto garbage = MetricsHttp::listen(loop, "metrics", "t", [] { return std::string(); });
    REQUIRE_FALSE(garbage.ok());
    CHECK(garbage.error().starts_with("invalid listen address \"metrics\": it has no :PORT"));
}
