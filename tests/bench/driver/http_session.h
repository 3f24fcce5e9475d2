// One MCP session over Streamable HTTP (2025-06-18) on a kept-alive HTTP/1.1 connection to
// mcpd's unix socket, for the figures that load the HTTP front door (2b, 9). Requests may be
// pipelined: mcpd answers them in order, one after the other.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "channel.h"
#include "figures.h"

namespace bench {

constexpr std::string_view kPath = "/mcp/demo";

// One kept-alive HTTP/1.1 connection carrying one MCP session.
class HttpSession {
public:
    explicit HttpSession(const std::string& socket) : fd_(Channel::connect_unix(socket)) {
        const Response init = round_trip(mcp::initialize("bench-http"));
        if (init.status != 200 || session_.empty())
            throw std::runtime_error("http: initialize answered " + std::to_string(init.status));
        if (round_trip(mcp::initialized()).status != 202)
            throw std::runtime_error("http: notifications/initialized was not accepted");
    }
    ~HttpSession() { ::close(fd_); }
    HttpSession(const HttpSession&) = delete;
    HttpSession& operator=(const HttpSession&) = delete;

    int fd() const { return fd_; }

    // Send a tools/call echo; its answer is read with read_available.
    void send_echo(std::uint64_t id) { write_all(request(mcp::echo(id, "hello"))); }

    // A tools/call echo and its answer, one after the other.
    void echo(std::uint64_t id) {
        const Response r = round_trip(mcp::echo(id, "hello"));
        if (r.status != 200)
            throw std::runtime_error("http: a call answered " + std::to_string(r.status));
    }

    // Read what is there; `on_body(body)` for each complete 200 answer. False at EOF.
    template <typename OnBody>
    bool read_available(OnBody&& on_body) {
        char buf[65536];
        for (;;) {
            const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0) {
                input_.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            if (n == 0) return false;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno != EINTR) return false;
        }
        while (const std::optional<Response> r = take_response()) {
            if (r->status != 200) throw std::runtime_error("http: a call answered " + std::to_string(r->status));
            on_body(r->body);
        }
        return true;
    }

private:
    struct Response {
        int status = 0;
        std::string body;
    };

    std::string request(std::string_view body) const {
        std::string text = "POST ";
        text += kPath;
        text += " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                "Accept: application/json\r\n";
        if (!session_.empty()) {
            text += "Mcp-Session-Id: " + session_ + "\r\nMCP-Protocol-Version: 2025-06-18\r\n";
        }
        text += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
        text += body;
        return text;
    }

    void write_all(std::string_view data) const {
        while (!data.empty()) {
            const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw std::runtime_error(std::string("http: send: ") + std::strerror(errno));
            data.remove_prefix(static_cast<std::size_t>(n));
        }
    }

    // A whole response at the front of the input, taken out; none while it is incomplete.
    std::optional<Response> take_response() {
        const std::size_t end = input_.find("\r\n\r\n");
        if (end == std::string::npos) return std::nullopt;
        const std::string_view head(input_.data(), end);
        Response r;
        std::from_chars(head.data() + 9, head.data() + std::min<std::size_t>(head.size(), 12), r.status);
        std::size_t length = 0;
        bool has_length = false;
        for (std::size_t at = head.find("\r\n"); at != std::string_view::npos;) {
            const std::size_t next = head.find("\r\n", at + 2);
            const std::string_view line = head.substr(at + 2, next == std::string_view::npos ? std::string_view::npos : next - at - 2);
            at = next;
            const std::size_t colon = line.find(':');
            if (colon == std::string_view::npos) continue;
            std::string name(line.substr(0, colon));
            for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            std::string_view value = line.substr(colon + 1);
            while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
            if (name == "content-length") {
                std::from_chars(value.data(), value.data() + value.size(), length);
                has_length = true;
            } else if (name == "mcp-session-id") {
                session_ = std::string(value);
            }
        }
        if (!has_length) throw std::runtime_error("http: an answer without Content-Length");
        if (input_.size() < end + 4 + length) return std::nullopt;
        r.body = input_.substr(end + 4, length);
        input_.erase(0, end + 4 + length);
        return r;
    }

    Response round_trip(std::string_view body) {
        write_all(request(body));
        for (;;) {
            if (std::optional<Response> r = take_response()) return *r;
            char buf[65536];
            const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0) throw std::runtime_error("http: the connection closed");
            input_.append(buf, static_cast<std::size_t>(n));
        }
    }

    int fd_;
    std::string session_;
    std::string input_;
};

}  // namespace bench
