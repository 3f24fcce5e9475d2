// 9. An upgrade in place under load (docs/UPGRADE.md): 16 sessions (6 on the socket, 6 on
// passed pipes, 4 over HTTP on kept-alive connections) pipelining small calls to one shared demo server while mcpd is upgraded in
// place again and again. Per upgrade: how long the `upgrade` request and the wait for the new
// process took, the state's size, and the time no session heard anything (from the last reply
// before the upgrade began to the first after it ended, the longest silence of the whole
// pool across the upgrade). Every reply must carry the id of its session's oldest request.
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "figures.h"
#include "http_session.h"

namespace bench {
namespace {

// A session's calls: on its channel, or (HTTP) as POSTs pipelined on its connection.
struct Stream {
    Session* session = nullptr;
    HttpSession* http = nullptr;
    std::uint64_t next_id = 1;
    std::uint64_t oldest = 0;
    int in_flight = 0;
    int fd() const { return http != nullptr ? http->fd() : session->channel->in_fd(); }
};

// Replies of every session, with when each came, until `stop`.
struct Load {
    std::mutex lock;
    std::vector<Clock::time_point> replies;
    std::uint64_t misrouted = 0, answered = 0;
    std::string error;
};

void run_load(std::vector<Session>& sessions, std::vector<std::unique_ptr<HttpSession>>& http, int depth,
              std::atomic<bool>& stop, Load& load) {
    const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
    std::vector<Stream> streams;
    streams.reserve(sessions.size() + http.size());
    for (Session& s : sessions) streams.push_back({&s, nullptr, s.next_id, 0, 0});
    for (auto& h : http) streams.push_back({nullptr, h.get(), 1, 0, 0});
    for (Stream& s : streams) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = &s;
        ::epoll_ctl(epoll, EPOLL_CTL_ADD, s.fd(), &ev);
    }
    const auto top_up = [&](Stream& s) {
        while (s.in_flight < depth && !stop.load()) {
            const std::uint64_t id = s.next_id++;
            if (s.in_flight == 0) s.oldest = id;
            if (s.http != nullptr) s.http->send_echo(id);
            else s.session->channel->queue(mcp::echo(id, "upgrade", s.session->echo_tool));
            ++s.in_flight;
        }
        if (s.http == nullptr)
            while (s.session->channel->flush()) {
            }
    };
    for (Stream& s : streams) top_up(s);
    epoll_event events[64];
    bool drained = false;
    while (!drained) {
        const int n = ::epoll_wait(epoll, events, 64, 30000);
        if (n == 0) {
            std::lock_guard guard(load.lock);
            load.error = "no reply for 30 s";
            break;
        }
        const Clock::time_point now = Clock::now();
        for (int i = 0; i < n; ++i) {
            Stream& s = *static_cast<Stream*>(events[i].data.ptr);
            std::uint64_t got = 0, wrong = 0;
            const auto on_reply = [&](std::string_view line) {
                if (reply_id(line) != static_cast<long long>(s.oldest)) ++wrong;
                ++s.oldest;
                --s.in_flight;
                ++got;
            };
            const bool open = s.http != nullptr ? s.http->read_available(on_reply)
                                                : s.session->channel->read_available(on_reply);
            {
                std::lock_guard guard(load.lock);
                load.answered += got;
                load.misrouted += wrong;
                if (got > 0) load.replies.push_back(now);
                if (!open) load.error = "a session was closed";
            }
            if (!open) {
                stop = true;
                break;
            }
            top_up(s);
        }
        drained = stop.load();
        if (drained)
            for (const Stream& s : streams) drained = drained && s.in_flight == 0;
    }
    ::close(epoll);
}

}  // namespace

Json run_upgrade(const Config& config) {
    const Profile& p = config.profile;
    TempDir dir;
    Mcpd mcpd(config.bin, dir, "mcpd");
    std::vector<Session> sessions;
    for (int i = 0; i < 12; ++i) sessions.push_back(i % 2 == 0 ? mcpd.attach() : mcpd.attach_fds());
    // mcpd serves HTTP beside its control socket: mcpd.sock -> mcpd-http.sock, bound after the
    // control socket mcpd's readiness is judged by.
    const std::string http_socket = dir.file("mcpd-http.sock");
    for (const auto deadline = Clock::now() + std::chrono::seconds(10); ::access(http_socket.c_str(), F_OK) != 0;) {
        if (Clock::now() > deadline) throw std::runtime_error("upgrade: " + http_socket + " never appeared");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::vector<std::unique_ptr<HttpSession>> http;
    for (int i = 0; i < 4; ++i) http.push_back(std::make_unique<HttpSession>(http_socket));
    const pid_t server = mcpd.server_pid();
    note("upgrade: 16 sessions pipelining (6 socket, 6 passed pipes, 4 HTTP), " +
         std::to_string(p.upgrades) + " upgrades in place");

    std::atomic<bool> stop{false};
    Load load;
    std::thread clients([&] { run_load(sessions, http, p.pipeline_depth, stop, load); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    Json rounds = Json::array();
    std::vector<std::pair<Clock::time_point, Clock::time_point>> windows;
    std::uint64_t upgraded = 0;
    for (int round = 0; round < p.upgrades && load.error.empty(); ++round) {
        const Clock::time_point begin = Clock::now();
        const Json result = mcpd.request({{"protocol", 1}, {"command", "upgrade"}});
        const Clock::time_point answered = Clock::now();
        ++upgraded;
        // The new process answers once it has taken everything over.
        for (;;) {
            const Json status = mcpd.request({{"protocol", 1}, {"command", "status"}});
            if (status["daemon"]["upgrades"].get<std::uint64_t>() >= upgraded) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        const Clock::time_point end = Clock::now();
        windows.emplace_back(begin, end);
        rounds.push_back({{"request_ms", std::chrono::duration<double, std::milli>(answered - begin).count()},
                          {"until_served_ms", std::chrono::duration<double, std::milli>(end - begin).count()},
                          {"state_bytes", result["state_bytes"]}});
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    stop = true;
    clients.join();
    if (!load.error.empty()) throw std::runtime_error("upgrade: " + load.error);
    if (mcpd.pid() <= 0 || mcpd.server_pid() != server)
        throw std::runtime_error("upgrade: the server's process changed");

    // The pool's longest silence around each upgrade: from the last reply before it began to
    // the first after it ended, or the longest gap between replies within it.
    std::vector<double> silences;
    std::vector<Clock::time_point>& t = load.replies;
    for (std::size_t i = 0; i < windows.size(); ++i) {
        const auto [begin, end] = windows[i];
        auto first = std::lower_bound(t.begin(), t.end(), begin);
        auto last = std::upper_bound(t.begin(), t.end(), end);
        double longest = 0;
        for (auto it = first == t.begin() ? first : first - 1; it != t.end() && it < last; ++it) {
            if (it + 1 == t.end()) break;
            longest = std::max(longest, std::chrono::duration<double, std::milli>(*(it + 1) - *it).count());
        }
        silences.push_back(longest);
        rounds[i]["silence_ms"] = longest;
    }
    std::vector<double> request_ms, served_ms, bytes;
    for (const Json& r : rounds) {
        request_ms.push_back(r["request_ms"].get<double>());
        served_ms.push_back(r["until_served_ms"].get<double>());
        bytes.push_back(r["state_bytes"].get<double>());
    }
    return {{"sessions", 16},
            {"http_sessions", 4},
            {"pipeline_depth", p.pipeline_depth},
            {"upgrades", upgraded},
            {"answered", load.answered},
            {"misrouted", load.misrouted},
            {"rounds", rounds},
            {"summary",
             {{"silence_ms_median", median(silences)},
              {"silence_ms_max", silences.empty() ? 0 : *std::max_element(silences.begin(), silences.end())},
              {"request_ms_median", median(request_ms)},
              {"until_served_ms_median", median(served_ms)},
              {"state_bytes_median", median(bytes)}}}};
}

}  // namespace bench
