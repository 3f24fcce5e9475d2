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
#include "http_session.h"
#include "proc.h"

namespace bench {
namespace {

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
