#include "mcp_session.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/child_setup.h"
#include "deadline.h"
#include "harness.h"

namespace integration {

using nlohmann::json;

namespace {

constexpr std::size_t kShownLineBytes = 300;

void set_nonblocking(int fd) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

std::size_t skip_space(std::string_view text, std::size_t at) {
    while (at < text.size() &&
           (text[at] == ' ' || text[at] == '\t' || text[at] == '\r' || text[at] == '\n'))
        ++at;
    return at;
}

// One past the end of the JSON value starting at `at`; npos when it is cut short.
std::size_t value_end(std::string_view text, std::size_t at) {
    if (at >= text.size()) return std::string_view::npos;
    if (text[at] == '"') {
        for (std::size_t i = at + 1; i < text.size(); ++i) {
            if (text[i] == '\\') {
                ++i;
            } else if (text[i] == '"') {
                return i + 1;
            }
        }
        return std::string_view::npos;
    }
    if (text[at] == '{' || text[at] == '[') {
        int depth = 0;
        for (std::size_t i = at; i < text.size(); ++i) {
            const char c = text[i];
            if (c == '"') {
                i = value_end(text, i);
                if (i == std::string_view::npos) return i;
                --i;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                return i + 1;
            }
        }
        return std::string_view::npos;
    }
    std::size_t i = at;
    while (i < text.size() &&
           std::string_view(",}] \t\r\n").find(text[i]) == std::string_view::npos)
        ++i;
    return i;
}

std::string shorten(const std::string& line) {
    if (line.size() <= kShownLineBytes) return line;
    return line.substr(0, kShownLineBytes) + "... (" + std::to_string(line.size()) + " bytes)";
}

}  // namespace

std::optional<std::string> raw_member(std::string_view text, std::string_view key) {
    std::size_t at = skip_space(text, 0);
    if (at >= text.size() || text[at] != '{') return std::nullopt;
    at = skip_space(text, at + 1);
    while (at < text.size() && text[at] == '"') {
        const std::size_t key_end = value_end(text, at);
        if (key_end == std::string_view::npos) return std::nullopt;
        const json name = json::parse(text.substr(at, key_end - at), nullptr, false);
        at = skip_space(text, key_end);
        if (at >= text.size() || text[at] != ':') return std::nullopt;
        at = skip_space(text, at + 1);
        const std::size_t end = value_end(text, at);
        if (end == std::string_view::npos) return std::nullopt;
        if (name.is_string() && name.get<std::string>() == key)
            return std::string(text.substr(at, end - at));
        at = skip_space(text, end);
        if (at >= text.size() || text[at] != ',') return std::nullopt;
        at = skip_space(text, at + 1);
    }
    return std::nullopt;
}

std::optional<std::string> raw_path(std::string_view text, const std::vector<std::string>& path) {
    std::optional<std::string> current(std::string{text});
    for (const std::string& key : path) {
        current = raw_member(*current, key);
        if (!current) return std::nullopt;
    }
    return current;
}

std::string request_line(std::string_view raw_id, const std::string& method, const json& params) {
    std::string line = R"({"jsonrpc":"2.0","id":)";
    line += raw_id;
    line += R"(,"method":)" + json(method).dump() + R"(,"params":)" + params.dump() + "}";
    return line;
}

json modern_meta(const std::string& client) {
    return {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
            {"io.modelcontextprotocol/clientCapabilities", json::object()},
            {"io.modelcontextprotocol/clientInfo", {{"name", client}, {"version", "1"}}}};
}

bool McpMessage::is_request() const {
    return json.is_object() && json.contains("method") && json.contains("id");
}

bool McpMessage::is_notification() const {
    return json.is_object() && json.contains("method") && !json.contains("id");
}

bool McpMessage::is_response() const {
    return json.is_object() && !json.contains("method") && json.contains("id");
}

std::string McpMessage::method() const {
    if (!json.is_object() || !json.contains("method") || !json["method"].is_string()) return {};
    return json["method"].get<std::string>();
}

std::string McpMessage::raw_id() const {
    return raw_member(raw, "id").value_or("");
}

std::string McpMessage::tool_text() const {
    if (!is_response()) return {};
    const nlohmann::json content =
        json.value("result", nlohmann::json::object()).value("content", nlohmann::json::array());
    if (!content.is_array() || content.empty() || !content[0].is_object()) return {};
    return content[0].value("text", "");
}

int McpMessage::error_code() const {
    if (!is_error() || !json["error"].is_object()) return 0;
    return json["error"].value("code", 0);
}

McpSession::McpSession(const std::string& socket_path, const std::string& server, Duration timeout)
    : label_("session on " + server) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof addr.sun_path)
        throw std::runtime_error("socket path too long: " + socket_path);
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        ::close(fd);
        throw std::runtime_error("cannot connect to " + socket_path + ": " + std::strerror(err));
    }
    in_fd_ = out_fd_ = fd;
    try {
        attach(server, timeout);
    } catch (...) {
        ::close(fd);
        throw;
    }
}

void McpSession::attach(const std::string& server, Duration timeout) {
    const json request = {{"protocol", 1}, {"command", "attach"}, {"server", server}};
    if (!send_line(request.dump(), timeout))
        throw std::runtime_error("mcpd did not take the attach request for " + server);
    const auto deadline = Clock::now() + timeout;
    std::size_t newline;
    while ((newline = in_buffer_.find('\n')) == std::string::npos && !eof_) {
        pollfd pfd{in_fd_, POLLIN, 0};
        if (::poll(&pfd, 1, remaining_ms(deadline)) == 0) break;
        read_into_buffer();
    }
    if (newline == std::string::npos)
        throw std::runtime_error("mcpd did not answer the attach request for " + server);
    const std::string reply_line = in_buffer_.substr(0, newline);
    in_buffer_.erase(0, newline + 1);
    const json reply = json::parse(reply_line, nullptr, false);
    if (!reply.is_object() || !reply.value("ok", false) || !reply.contains("result"))
        throw std::runtime_error("attach to " + server + " refused: " + reply_line);
    session_id_ = reply["result"].value("session", std::uint64_t{0});
    label_ = "session " + std::to_string(session_id_) + " on " + server;
}

McpSession::McpSession(int in_fd, int out_fd, std::string label)
    : label_(std::move(label)), in_fd_(in_fd), out_fd_(out_fd) {
    set_nonblocking(in_fd_);
    set_nonblocking(out_fd_);
}

McpSession::~McpSession() {
    if (out_fd_ >= 0 && out_fd_ != in_fd_) ::close(out_fd_);
    if (in_fd_ >= 0) ::close(in_fd_);
}

void McpSession::queue(std::string_view line) {
    if (out_sent_ == out_.size()) {
        out_.clear();
        out_sent_ = 0;
    }
    out_.append(line);
    out_ += '\n';
}

bool McpSession::flush() {
    while (out_sent_ < out_.size() && out_fd_ >= 0) {
        const ssize_t n =
            out_fd_ == in_fd_
                ? ::send(out_fd_, out_.data() + out_sent_, out_.size() - out_sent_, MSG_NOSIGNAL)
                : ::write(out_fd_, out_.data() + out_sent_, out_.size() - out_sent_);
        if (n > 0) {
            out_sent_ += static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && errno == EAGAIN) {
            return true;
        } else {
            stream_error_ = errno;
            out_sent_ = out_.size();  // the peer is gone: nothing more can be written
            return false;
        }
    }
    return output_waiting();
}

bool McpSession::send_line(std::string_view line, Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    queue(line);
    while (flush()) {
        pollfd pfd{out_fd_, POLLOUT, 0};
        if (::poll(&pfd, 1, remaining_ms(deadline)) == 0) return false;
    }
    return stream_error_ == 0;
}

void McpSession::request_raw(std::string_view raw_id, const std::string& method,
                             const json& params) {
    const std::string line = request_line(raw_id, method, params);
    if (!send_line(line)) FAIL(label_ << ": could not send " << shorten(line));
}

json McpSession::request(const std::string& method, const json& params, const json& id) {
    request_raw(id.dump(), method, params);
    return id;
}

json McpSession::request(const std::string& method, const json& params) {
    return request(method, params, json(next_id_++));
}

json McpSession::call_tool(const std::string& name, const json& arguments, const json& meta) {
    json params = {{"name", name}, {"arguments", arguments}};
    if (!meta.is_null()) params["_meta"] = meta;
    return request("tools/call", params);
}

void McpSession::notify(const std::string& method, const json& params) {
    const json message = {{"jsonrpc", "2.0"}, {"method", method}, {"params", params}};
    if (!send_line(message.dump())) FAIL(label_ << ": could not send " << method);
}

McpMessage McpSession::initialize(const std::string& client_name, const json& capabilities,
                                  Duration timeout) {
    const json id =
        request("initialize", {{"protocolVersion", "2025-06-18"},
                               {"capabilities", capabilities},
                               {"clientInfo", {{"name", client_name}, {"version", "1.0"}}}});
    McpMessage reply = wait_response(id, timeout);
    INFO(label_ << ": initialize answered " << shorten(reply.raw));
    REQUIRE(reply.json.contains("result"));
    notify("notifications/initialized");
    return reply;
}

void McpSession::read_into_buffer() {
    char chunk[65536];
    for (;;) {
        const ssize_t n = ::read(in_fd_, chunk, sizeof chunk);
        if (n > 0) {
            in_buffer_.append(chunk, static_cast<std::size_t>(n));
            if (static_cast<std::size_t>(n) < sizeof chunk) return;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        eof_ = true;
        if (n < 0) stream_error_ = errno;
        return;
    }
}

std::size_t McpSession::split_lines(const std::function<void(McpMessage&&)>& sink) {
    std::size_t count = 0;
    std::size_t start = 0;
    for (std::size_t newline; (newline = in_buffer_.find('\n', start)) != std::string::npos;
         start = newline + 1) {
        McpMessage message;
        message.seq = ++received_;
        message.raw = in_buffer_.substr(start, newline - start);
        message.json = json::parse(message.raw, nullptr, false);
        ++count;
        if (sink) {
            sink(std::move(message));
        } else {
            inbox_.push_back(std::move(message));
        }
    }
    in_buffer_.erase(0, start);
    return count;
}

std::size_t McpSession::read_available(const std::function<void(McpMessage&&)>& sink) {
    if (!eof_) read_into_buffer();
    return split_lines(sink);
}

bool McpSession::pump(Duration wait) {
    const auto deadline = Clock::now() + wait;
    while (!eof_) {
        read_available();
        if (eof_) break;
        pollfd pfd{in_fd_, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
        if (ready == 0) break;
        if (ready < 0 && errno != EINTR) break;
    }
    return !eof_;
}

std::optional<McpMessage> McpSession::wait_for(const std::function<bool(const McpMessage&)>& match,
                                               Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        for (auto it = inbox_.begin(); it != inbox_.end(); ++it) {
            if (!match(*it)) continue;
            McpMessage found = std::move(*it);
            inbox_.erase(it);
            return found;
        }
        if (eof_ || Clock::now() >= deadline) return std::nullopt;
        pollfd pfd{in_fd_, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, remaining_ms(deadline));
        if (ready < 0 && errno != EINTR) return std::nullopt;
        read_available();
    }
}

McpMessage McpSession::wait_response(const json& id, Duration timeout) {
    const auto start = Clock::now();
    auto reply = wait_for(
        [&id](const McpMessage& m) { return m.is_response() && m.json["id"] == id; }, timeout);
    if (!reply) {
        FAIL(label_ << ": no response to id " << id.dump() << " after " << ms_since(start) << " ms"
                    << (eof_ ? " (the stream ended)" : "") << "; inbox:\n"
                    << describe_inbox());
    }
    return std::move(*reply);
}

bool McpSession::wait_closed(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!eof_) {
        read_into_buffer();
        in_buffer_.clear();
        if (eof_) break;
        pollfd pfd{in_fd_, POLLIN, 0};
        if (::poll(&pfd, 1, remaining_ms(deadline)) == 0) return false;
    }
    return true;
}

std::vector<McpMessage> McpSession::notifications(const std::string& method) const {
    std::vector<McpMessage> out;
    for (const McpMessage& m : inbox_) {
        if (m.is_notification() && (method.empty() || m.method() == method)) out.push_back(m);
    }
    return out;
}

std::vector<McpMessage> McpSession::take_notifications(const std::string& method) {
    std::vector<McpMessage> out;
    for (auto it = inbox_.begin(); it != inbox_.end();) {
        if (it->is_notification() && (method.empty() || it->method() == method)) {
            out.push_back(std::move(*it));
            it = inbox_.erase(it);
        } else {
            ++it;
        }
    }
    return out;
}

std::vector<McpMessage> McpSession::responses() const {
    std::vector<McpMessage> out;
    for (const McpMessage& m : inbox_) {
        if (m.is_response()) out.push_back(m);
    }
    return out;
}

std::string McpSession::describe_inbox(std::size_t max_lines) const {
    std::ostringstream text;
    std::size_t shown = 0;
    for (const McpMessage& m : inbox_) {
        if (shown++ == max_lines) {
            text << "  ... " << inbox_.size() - max_lines << " more\n";
            break;
        }
        text << "  #" << m.seq << " " << shorten(m.raw) << "\n";
    }
    if (inbox_.empty()) text << "  (empty)\n";
    return text.str();
}

void McpSession::close_write() {
    if (out_fd_ == in_fd_) {
        ::shutdown(out_fd_, SHUT_WR);
    } else if (out_fd_ >= 0) {
        ::close(out_fd_);
        out_fd_ = -1;
    }
}

PipedProcess::PipedProcess(const std::vector<std::string>& argv, const std::string& stderr_path) {
    if (argv.empty() || argv[0].empty() || argv[0][0] != '/')
        throw std::runtime_error("PipedProcess wants an absolute program path");
    int to_child[2];
    int from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    const int err_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (err_fd < 0) throw std::runtime_error("cannot open " + stderr_path);
    const std::vector<std::string> env = child_environment();
    std::vector<char*> c_argv;
    std::vector<char*> c_env;
    for (const std::string& s : argv) c_argv.push_back(const_cast<char*>(s.c_str()));
    for (const std::string& s : env) c_env.push_back(const_cast<char*>(s.c_str()));
    c_argv.push_back(nullptr);
    c_env.push_back(nullptr);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
        mcpd::prepare_forked_child(parent);
        if (::dup2(to_child[0], STDIN_FILENO) < 0 || ::dup2(from_child[1], STDOUT_FILENO) < 0 ||
            ::dup2(err_fd, STDERR_FILENO) < 0)
            _exit(126);
        ::execve(c_argv[0], c_argv.data(), c_env.data());
        _exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    ::close(err_fd);
    session_ = std::make_unique<McpSession>(
        from_child[0], to_child[1], "pipes of " + argv[0] + " (pid " + std::to_string(pid_) + ")");
}

PipedProcess::~PipedProcess() {
    session_.reset();  // closes our ends: it sees EOF on stdin
    if (!wait_exit(5s)) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
}

std::optional<int> PipedProcess::wait_exit(Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!status_) {
        int status = 0;
        const pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            status_ = decode_wait_status(status);
            break;
        }
        if ((r < 0 && errno != EINTR) || Clock::now() >= deadline) break;
        std::this_thread::sleep_for(5ms);
    }
    return status_;
}

}  // namespace integration
