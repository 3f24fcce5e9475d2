// GET /metrics over a real loopback socket: what each method and path is
// answered, the bound address, and the listener's own hygiene (close-on-exec, a
// port in use, freed on destruction).
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
#include <thread>

#include "common/listen_address.h"
#include "common/unique_fd.h"
#include "daemon/control/metrics_http.h"

using mcpd::EventLoop;
using mcpd::MetricsHttp;
using mcpd::UniqueFd;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kText =
    "# HELP mcpd_up Whether mcpd answered: always 1.\n"
    "# TYPE mcpd_up gauge\nmcpd_up 1\n";

std::uint16_t port_of(const MetricsHttp &server) {
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
  if (::connect(fd.get(), reinterpret_cast<const sockaddr *>(&address),
                sizeof address) != 0)
    return UniqueFd();
  return fd;
}

// Send `request` and read until the server closes, on a thread, while `loop`
// turns here.
std::string exchange(EventLoop &loop, std::uint16_t port,
                     const std::string &request) {
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

std::string get(EventLoop &loop, std::uint16_t port, const std::string &method,
                const std::string &target) {
  return exchange(
      loop, port,
      method + " " + target +
          " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

std::string status_line(const std::string &response) {
  return response.substr(0, response.find("\r\n"));
}

std::string body_of(const std::string &response) {
  const std::size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? std::string() : response.substr(end + 4);
}

bool has_header(const std::string &response, const std::string &line) {
  const std::string head = response.substr(0, response.find("\r\n\r\n") + 2);
  return head.find("\r\n" + line + "\r\n") != std::string::npos;
}

struct Served {
  EventLoop loop;
  int renders = 0;
  std::unique_ptr<MetricsHttp> server;

  explicit Served(std::string_view address = "127.0.0.1:0") {
    auto result = MetricsHttp::listen(loop, address, [this] {
      ++renders;
      return std::string(kText);
    });
    INFO((result ? "" : result.error()));
    REQUIRE(result.ok());
    server = std::move(result).value();
  }
  std::uint16_t port() const { return port_of(*server); }
};

} // namespace

TEST_CASE("GET /metrics answers the rendered text as Prometheus text 0.0.4",
          "[metrics_http]") {
  Served served;
  const std::string response =
      get(served.loop, served.port(), "GET", "/metrics");
  CHECK(status_line(response) == "HTTP/1.1 200 OK");
  CHECK(has_header(response,
                   "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
  CHECK(
      has_header(response, "Content-Length: " + std::to_string(kText.size())));
  CHECK(body_of(response) == kText);
  CHECK(served.renders == 1);

  // A query string is ignored.
  const std::string query =
      get(served.loop, served.port(), "GET", "/metrics?name[]=x&y");
  CHECK(status_line(query) == "HTTP/1.1 200 OK");
  CHECK(body_of(query) == kText);
  // HTTP/1.0 without a Host header too.
  const std::string old =
      exchange(served.loop, served.port(), "GET /metrics HTTP/1.0\r\n\r\n");
  CHECK(status_line(old) == "HTTP/1.0 200 OK");
  CHECK(body_of(old) == kText);
}

TEST_CASE("HEAD /metrics answers the headers of a GET and no body",
          "[metrics_http]") {
  Served served;
  const std::string response =
      get(served.loop, served.port(), "HEAD", "/metrics");
  CHECK(status_line(response) == "HTTP/1.1 200 OK");
  CHECK(has_header(response,
                   "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
  CHECK(
      has_header(response, "Content-Length: " + std::to_string(kText.size())));
  CHECK(body_of(response).empty());
}

TEST_CASE("another method is 405 with Allow, another path 404",
          "[metrics_http]") {
  Served served;
  for (const char *method : {"POST", "PUT", "DELETE", "OPTIONS", "PATCH"}) {
    INFO(method);
    const std::string response =
        get(served.loop, served.port(), method, "/metrics");
    CHECK(status_line(response) == "HTTP/1.1 405 Method Not Allowed");
    CHECK(has_header(response, "Allow: GET, HEAD"));
  }
  for (const char *path :
       {"/", "/other", "/metrics/", "/metricsx", "/Metrics", "/metrics/x"}) {
    INFO(path);
    const std::string response = get(served.loop, served.port(), "GET", path);
    CHECK(status_line(response) == "HTTP/1.1 404 Not Found");
    CHECK(body_of(response) == "mcpd serves /metrics only\n");
  }
  CHECK(served.renders == 0);
}

TEST_CASE("oversized headers are refused and the server goes on answering",
          "[metrics_http]") {
  Served served;
  const std::string huge = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Filler: " +
                           std::string(16 * 1024, 'a') +
                           "\r\nConnection: close\r\n\r\n";
  const std::string refused = exchange(served.loop, served.port(), huge);
  CHECK_FALSE(refused.starts_with("HTTP/1.1 200"));
  CHECK(served.renders == 0);
  CHECK(status_line(get(served.loop, served.port(), "GET", "/metrics")) ==
        "HTTP/1.1 200 OK");
}

TEST_CASE("port 0 binds a free port, which bound_address names",
          "[metrics_http]") {
  Served served;
  CHECK(served.server->bound_address().starts_with("127.0.0.1:"));
  CHECK(served.port() != 0);

  Served bare("0"); // a bare port is 127.0.0.1's
  CHECK(bare.server->bound_address().starts_with("127.0.0.1:"));
  CHECK(bare.port() != 0);
  CHECK(status_line(get(bare.loop, bare.port(), "GET", "/metrics")) ==
        "HTTP/1.1 200 OK");
}

TEST_CASE("the listening socket is close-on-exec and goes with the server",
          "[metrics_http]") {
  auto served = std::make_unique<Served>();
  const std::uint16_t port = served->port();
  int listening = -1;
  DIR *fds = ::opendir("/proc/self/fd");
  REQUIRE(fds != nullptr);
  while (const dirent *entry = ::readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    sockaddr_in address{};
    socklen_t length = sizeof address;
    if (entry->d_name[0] == '.' || fd == ::dirfd(fds))
      continue;
    if (::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) ==
            0 &&
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

TEST_CASE("an address in use or malformed is a sentence naming it",
          "[metrics_http]") {
  Served first;
  EventLoop loop;
  const std::string taken = first.server->bound_address();
  const auto in_use =
      MetricsHttp::listen(loop, taken, [] { return std::string(); });
  REQUIRE_FALSE(in_use.ok());
  CHECK(in_use.error() ==
        "cannot serve metrics: cannot bind " + taken + ": " +
            std::strerror(EADDRINUSE) +
            " (another program listens there: choose another port for "
            "[daemon] metrics_listen, or stop that program)");
  CHECK_FALSE(in_use.transient());

  const auto garbage =
      MetricsHttp::listen(loop, "metrics", [] { return std::string(); });
  REQUIRE_FALSE(garbage.ok());
  CHECK(garbage.error().starts_with(
      "invalid listen address \"metrics\": it has no :PORT"));
}
