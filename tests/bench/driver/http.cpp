// 2b. HTTP sessions: S MCP sessions over Streamable HTTP (2025-06-18) on mcpd's unix socket,
// kept-alive connections with one POST of a tools/call echo in flight each, beside the same
// number of socket sessions with one request in flight each. mcpd's CPU per round trip for
// both, and their ratio: what an HTTP session costs over a plain one.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include "figures.h"
#include "proc.h"

namespace bench {
namespace {

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

// `messages` round trips over the first `count` HTTP sessions, one in flight each.
Measure http_run(std::vector<std::unique_ptr<HttpSession>>& sessions, std::size_t count,
                 int messages, pid_t mcpd, pid_t server) {
    const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
    for (std::size_t i = 0; i < count; ++i) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = sessions[i].get();
        ::epoll_ctl(epoll, EPOLL_CTL_ADD, sessions[i]->fd(), &ev);
    }
    Measure m;
    int sent = 0;
    std::uint64_t received = 0, next_id = 1000;
    const std::uint64_t mcpd_before = cpu_ns(mcpd);
    const std::uint64_t server_before = cpu_ns(server);
    const auto start = Clock::now();
    for (std::size_t i = 0; i < count && sent < messages; ++i, ++sent) sessions[i]->send_echo(next_id++);
    epoll_event events[256];
    while (received < static_cast<std::uint64_t>(messages)) {
        const int n = ::epoll_wait(epoll, events, 256, 30000);
        if (n == 0) throw std::runtime_error("http: no answer for 30 s");
        for (int i = 0; i < n; ++i) {
            auto& s = *static_cast<HttpSession*>(events[i].data.ptr);
            int answers = 0;
            if (!s.read_available([&](const std::string& body) {
                    if (body.find("\"result\"") == std::string::npos) ++m.misrouted;
                    ++answers;
                }))
                throw std::runtime_error("http: a connection was closed");
            received += static_cast<std::uint64_t>(answers);
            for (int a = 0; a < answers && sent < messages; ++a, ++sent) s.send_echo(next_id++);
        }
    }
    m.seconds = seconds_since(start);
    m.middle_cpu_ns = cpu_ns(mcpd) - mcpd_before;
    m.server_cpu_ns = cpu_ns(server) - server_before;
    m.messages = received;
    ::close(epoll);
    return m;
}

Json figures_of(const Measure& m) {
    const double n = static_cast<double>(m.messages);
    return {{"messages", m.messages},
            {"messages_per_s", n / m.seconds},
            {"mcpd_cpu_us_per_round_trip", static_cast<double>(m.middle_cpu_ns) / 1e3 / n},
            {"misrouted", m.misrouted}};
}

}  // namespace

Json run_http(const Config& config) {
    const Profile& p = config.profile;
    const int most = *std::max_element(p.http_sessions.begin(), p.http_sessions.end());
    TempDir dir;
    Mcpd mcpd(config.bin, dir, "mcpd");
    // mcpd serves HTTP beside its control socket: mcpd.sock -> mcpd-http.sock.
    const std::string socket = dir.file("mcpd-http.sock");
    // It is bound after the control socket mcpd's readiness is judged by.
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (::access(socket.c_str(), F_OK) != 0) {
        if (Clock::now() > deadline) throw std::runtime_error("http: " + socket + " never appeared");
        sleep_ms(20);
    }
    std::vector<std::unique_ptr<HttpSession>> http;
    std::vector<Session> plain;
    for (int i = 0; i < most; ++i) {
        http.push_back(std::make_unique<HttpSession>(socket));
        plain.push_back(mcpd.attach());
    }
    const pid_t server = mcpd.server_pid();
    http_run(http, 1, 500, mcpd.pid(), server);
    pipeline(plain, 1, 500, 1, mcpd.pid(), server);

    Json rounds = Json::array();
    for (int round = 0; round < p.rounds; ++round) {
        Json r;
        for (const int s : p.http_sessions) {
            const auto count = static_cast<std::size_t>(s);
            const Json over_http = figures_of(http_run(http, count, p.http_messages, mcpd.pid(), server));
            const Json over_socket =
                figures_of(pipeline(plain, count, p.http_messages, 1, mcpd.pid(), server));
            r[std::to_string(s)] = {
                {"http", over_http},
                {"socket", over_socket},
                {"ratio_cpu", over_http["mcpd_cpu_us_per_round_trip"].get<double>() /
                                  over_socket["mcpd_cpu_us_per_round_trip"].get<double>()}};
        }
        note("http round " + std::to_string(round + 1) + ": " + std::to_string(most) +
             " sessions: mcpd CPU per round trip, HTTP / socket " +
             std::to_string(r[std::to_string(most)]["ratio_cpu"].get<double>()));
        rounds.push_back(r);
    }
    Json summary;
    for (const int s : p.http_sessions) {
        const std::string k = "/" + std::to_string(s) + "/";
        summary[std::to_string(s)] = {
            {"http_cpu_us_per_round_trip", median_of(rounds, k + "http/mcpd_cpu_us_per_round_trip")},
            {"socket_cpu_us_per_round_trip", median_of(rounds, k + "socket/mcpd_cpu_us_per_round_trip")},
            {"http_messages_per_s", median_of(rounds, k + "http/messages_per_s")},
            {"socket_messages_per_s", median_of(rounds, k + "socket/messages_per_s")},
            {"ratio_cpu", median_of(rounds, k + "ratio_cpu")}};
    }
    return {{"messages_per_measure", p.http_messages}, {"rounds", rounds}, {"summary", summary}};
}

}  // namespace bench
