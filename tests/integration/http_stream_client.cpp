#include "http_stream_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "deadline.h"

namespace integration {

HttpStreamClient::HttpStreamClient(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        ::close(fd_);
        throw std::runtime_error("cannot connect to " + path + ": " + std::strerror(err));
    }
}

HttpStreamClient::~HttpStreamClient() {
    if (fd_ >= 0) ::close(fd_);
}

bool HttpStreamClient::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

bool HttpStreamClient::fill(Clock::time_point deadline) {
    if (closed_) return false;
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
    if (ready <= 0) return false;
    char buffer[65536];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n <= 0) {
        closed_ = true;
        return false;
    }
    raw_.append(buffer, static_cast<std::size_t>(n));
    return true;
}

std::optional<HttpHead> HttpStreamClient::read_head(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    std::size_t end = std::string::npos;
    while ((end = raw_.find("\r\n\r\n")) == std::string::npos)
        if (!fill(deadline)) return std::nullopt;
    const std::string head = raw_.substr(0, end);
    raw_.erase(0, end + 4);
    HttpHead out;
    std::size_t at = head.find("\r\n");
    const std::string status_line = head.substr(0, at);
    if (status_line.size() < 12) return std::nullopt;
    out.status = std::stoi(status_line.substr(9, 3));
    while (at != std::string::npos) {
        const std::size_t next = head.find("\r\n", at + 2);
        const std::string line = head.substr(at + 2, next == std::string::npos ? std::string::npos : next - at - 2);
        at = next;
        const std::size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        out.headers[name] = value;
    }
    chunked_ = out.headers["transfer-encoding"] == "chunked";
    length_.reset();
    if (out.headers.contains("content-length")) length_ = std::stoul(out.headers["content-length"]);
    ended_ = false;
    body_.clear();
    return out;
}

bool HttpStreamClient::take_chunks() {
    for (;;) {
        const std::size_t line_end = raw_.find("\r\n");
        if (line_end == std::string::npos) return false;
        const std::size_t size = std::stoul(raw_.substr(0, line_end), nullptr, 16);
        if (raw_.size() < line_end + 2 + size + 2) return false;
        body_.append(raw_, line_end + 2, size);
        raw_.erase(0, line_end + 2 + size + 2);
        if (size == 0) return true;
    }
}

std::optional<std::string> HttpStreamClient::read_body(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    if (chunked_) {
        while (!take_chunks())
            if (!fill(deadline)) return std::nullopt;
        ended_ = true;
        return std::exchange(body_, {});
    }
    const std::size_t want = length_.value_or(0);
    while (raw_.size() < want)
        if (!fill(deadline)) return std::nullopt;
    std::string body = raw_.substr(0, want);
    raw_.erase(0, want);
    ended_ = true;
    return body;
}

std::optional<std::string> HttpStreamClient::next_event(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        std::size_t end;
        while ((end = body_.find("\n\n")) != std::string::npos) {
            const std::string event = body_.substr(0, end);
            body_.erase(0, end + 2);
            std::string data;
            bool any = false;
            std::size_t at = 0;
            while (at <= event.size()) {
                const std::size_t next = std::min(event.find('\n', at), event.size());
                const std::string line = event.substr(at, next - at);
                if (line.starts_with("data: ")) {
                    if (any) data += '\n';
                    data += line.substr(6);
                    any = true;
                }
                at = next + 1;
            }
            if (any) return data;  // a keep-alive comment has none
        }
        if (ended_) return std::nullopt;
        if (take_chunks()) {
            ended_ = true;
            continue;
        }
        if (!fill(deadline)) return std::nullopt;
    }
}

bool HttpStreamClient::wait_closed(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (fill(deadline)) raw_.clear();
    return closed_;
}

std::string mcp_request(const std::string& target, const std::string& body, const std::string& session,
                        bool sse) {
    std::string out = (body.empty() ? "GET" : "POST") + std::string(" /mcp/") + target + " HTTP/1.1\r\n";
    out += "Host: localhost\r\n";
    if (body.empty()) {
        out += "Accept: text/event-stream\r\n";
    } else {
        out += "Content-Type: application/json\r\n";
        out += sse ? "Accept: application/json, text/event-stream\r\n" : "Accept: application/json\r\n";
        out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    if (!session.empty()) out += "Mcp-Session-Id: " + session + "\r\n";
    out += "\r\n" + body;
    return out;
}

std::string mcp_call(const std::string& id, const std::string& tool, const nlohmann::json& arguments,
                     const std::string& progress_token) {
    nlohmann::json params = {{"name", tool}, {"arguments", arguments}};
    if (!progress_token.empty()) params["_meta"] = {{"progressToken", progress_token}};
    return nlohmann::json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", params}}.dump();
}

std::string call_answer_text(const std::string& body) {
    const nlohmann::json answer = nlohmann::json::parse(body, nullptr, false);
    if (answer.is_discarded() || !answer.contains("result")) return {};
    return answer["result"]["content"][0].value("text", "");
}

std::string open_mcp_session(const std::string& path, const std::string& target, const std::string& client) {
    HttpStreamClient c(path);
    const nlohmann::json initialize = {{"jsonrpc", "2.0"},
                                       {"id", 1},
                                       {"method", "initialize"},
                                       {"params",
                                        {{"protocolVersion", "2025-06-18"},
                                         {"capabilities", nlohmann::json::object()},
                                         {"clientInfo", {{"name", client}, {"version", "1"}}}}}};
    if (!c.send(mcp_request(target, initialize.dump(), "", false))) return {};
    const std::optional<HttpHead> head = c.read_head();
    if (!head || head->status != 200 || !head->headers.contains("mcp-session-id") || !c.read_body()) return {};
    const std::string session = head->headers.at("mcp-session-id");
    if (!c.send(mcp_request(target, R"({"jsonrpc":"2.0","method":"notifications/initialized"})", session, false)))
        return {};
    const std::optional<HttpHead> accepted = c.read_head();
    if (!accepted || accepted->status != 202 || !c.read_body()) return {};
    return session;
}

}  // namespace integration
