// 2. Throughput: S sessions pipelining small tools/call echo requests (`pipeline_depth` in
// flight each) to one shared demo server, through the minimal relay, through mcpd and through
// an mcpd group session (a group of that server and another), in turns. Messages per second,
// CPU time of the process in between per forwarded line, and its inverse, the lines one core
// forwards per second of CPU (what it forwards at saturation). Every reply must carry the id
// of its session's oldest request in flight.
#include <sys/epoll.h>
#include <unistd.h>

#include <stdexcept>

#include "figures.h"
#include "proc.h"

namespace bench {
namespace {

struct Flow {
    Session* session;
    std::uint64_t oldest = 0;  // id of the oldest request in flight
    int in_flight = 0;
    bool writing = false;
};

}  // namespace

Measure pipeline(std::vector<Session>& sessions, std::size_t count, int messages, int depth,
                 pid_t middle, pid_t server) {
    const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
    std::vector<Flow> flows;
    flows.reserve(count);
    for (std::size_t i = 0; i < count; ++i) flows.push_back({&sessions[i], 0, 0, false});
    const auto watch = [&](Flow& f, int op) {
        epoll_event ev{};
        ev.events = EPOLLIN | (f.writing ? std::uint32_t{EPOLLOUT} : 0U);
        ev.data.ptr = &f;
        if (f.session->channel->in_fd() == f.session->channel->out_fd()) {
            ::epoll_ctl(epoll, op, f.session->channel->in_fd(), &ev);
            return;
        }
        epoll_event in{};
        in.events = EPOLLIN;
        in.data.ptr = &f;
        if (op == EPOLL_CTL_ADD) ::epoll_ctl(epoll, op, f.session->channel->in_fd(), &in);
    };
    for (Flow& f : flows) watch(f, EPOLL_CTL_ADD);

    Measure m;
    int sent = 0;
    std::uint64_t received = 0;
    const auto send_more = [&](Flow& f) {
        while (f.in_flight < depth && sent < messages) {
            const std::uint64_t id = f.session->next_id++;
            if (f.in_flight == 0) f.oldest = id;
            f.session->channel->queue(mcp::echo(id, "hello", f.session->echo_tool));
            ++f.in_flight;
            ++sent;
        }
        const bool waiting = f.session->channel->flush();
        if (waiting != f.writing) {
            f.writing = waiting;
            watch(f, EPOLL_CTL_MOD);
        }
    };

    const std::uint64_t middle_before = cpu_ns(middle);
    const std::uint64_t server_before = cpu_ns(server);
    const auto start = Clock::now();
    for (Flow& f : flows) send_more(f);
    epoll_event events[256];
    while (received < static_cast<std::uint64_t>(messages)) {
        const int n = ::epoll_wait(epoll, events, 256, 30000);
        if (n == 0) throw std::runtime_error("throughput: no reply for 30 s");
        for (int i = 0; i < n; ++i) {
            Flow& f = *static_cast<Flow*>(events[i].data.ptr);
            const bool open = f.session->channel->read_available([&](std::string_view line) {
                if (reply_id(line) != static_cast<long long>(f.oldest)) ++m.misrouted;
                ++f.oldest;
                --f.in_flight;
                ++received;
            });
            if (!open) throw std::runtime_error("throughput: a session was closed");
            send_more(f);
        }
    }
    m.seconds = seconds_since(start);
    m.middle_cpu_ns = cpu_ns(middle) - middle_before;
    m.server_cpu_ns = cpu_ns(server) - server_before;
    m.messages = received;
    ::close(epoll);
    return m;
}

Json run_throughput(const Config& config) {
    const Profile& p = config.profile;
    const int most = *std::max_element(p.sessions.begin(), p.sessions.end());
    TempDir dir;
    Relay relay(config.bin, dir, "relay");
    McpdOptions options;
    options.servers = 2;
    options.pair_group = true;
    Mcpd mcpd(config.bin, dir, "mcpd", options);
    std::vector<Session> relay_sessions, mcpd_sessions, group_sessions;
    for (int i = 0; i < most; ++i) {
        relay_sessions.push_back(relay.connect());
        mcpd_sessions.push_back(mcpd.attach());
        group_sessions.push_back(mcpd.attach("pair"));
        group_sessions.back().echo_tool = "demo__echo";
    }
    const pid_t relay_server = relay.server_pid();
    const pid_t mcpd_server = mcpd.server_pid();
    note("throughput: " + std::to_string(most) + " sessions open on the relay and on mcpd");

    const auto one = [&](const Measure& m) {
        const double n = static_cast<double>(m.messages);
        return Json{
            {"messages", m.messages},
            {"seconds", m.seconds},
            {"messages_per_s", n / m.seconds},
            // A round trip is two forwarded lines: the request and its reply.
            {"middle_cpu_us_per_line", static_cast<double>(m.middle_cpu_ns) / 1e3 / (2 * n)},
            {"lines_per_cpu_s", m.middle_cpu_ns == 0 ? 0.0 : 2 * n / (static_cast<double>(m.middle_cpu_ns) / 1e9)},
            {"server_cpu_us_per_message", static_cast<double>(m.server_cpu_ns) / 1e3 / n},
            {"misrouted", m.misrouted}};
    };
    // Warm both paths up.
    pipeline(relay_sessions, 1, 2000, p.pipeline_depth, relay.pid(), relay_server);
    pipeline(mcpd_sessions, 1, 2000, p.pipeline_depth, mcpd.pid(), mcpd_server);
    pipeline(group_sessions, 1, 2000, p.pipeline_depth, mcpd.pid(), mcpd_server);

    Json rounds = Json::array();
    for (int round = 0; round < p.rounds; ++round) {
        Json r;
        for (const int s : p.sessions) {
            const auto count = static_cast<std::size_t>(s);
            const Json rel = one(pipeline(relay_sessions, count, p.throughput_messages,
                                          p.pipeline_depth, relay.pid(), relay_server));
            const Json own = one(pipeline(mcpd_sessions, count, p.throughput_messages,
                                          p.pipeline_depth, mcpd.pid(), mcpd_server));
            const Json group = one(pipeline(group_sessions, count, p.throughput_messages,
                                            p.pipeline_depth, mcpd.pid(), mcpd_server));
            const std::string key = std::to_string(s);
            const auto ratio = [](const Json& a, const Json& b, const char* figure) {
                const double under = b[figure].get<double>();
                return under > 0 ? a[figure].get<double>() / under : 0.0;
            };
            r[key] = {{"relay", rel},
                      {"mcpd", own},
                      {"mcpd_group", group},
                      {"ratio_rate", ratio(own, rel, "messages_per_s")},
                      {"ratio_cpu_per_line", ratio(own, rel, "middle_cpu_us_per_line")},
                      {"ratio_lines_per_cpu_s", ratio(own, rel, "lines_per_cpu_s")},
                      {"ratio_group_cpu_per_line", ratio(group, own, "middle_cpu_us_per_line")}};
        }
        r["load"] = load_average();
        note("throughput round " + std::to_string(round + 1) + ": " + std::to_string(most) +
             " sessions: relay " +
             std::to_string(r[std::to_string(most)]["relay"]["messages_per_s"].get<double>()) +
             " msg/s, mcpd " +
             std::to_string(r[std::to_string(most)]["mcpd"]["messages_per_s"].get<double>()) +
             " msg/s");
        rounds.push_back(r);
    }
    Json summary;
    for (const int s : p.sessions) {
        const std::string k = "/" + std::to_string(s) + "/";
        Json row;
        for (const char* who : {"relay", "mcpd", "mcpd_group"}) {
            for (const char* f : {"messages_per_s", "middle_cpu_us_per_line", "lines_per_cpu_s",
                                  "server_cpu_us_per_message"}) {
                row[who][f] = median_of(rounds, k + who + "/" + f);
            }
            std::uint64_t misrouted = 0;
            for (const Json& r : rounds)
                misrouted += r[std::to_string(s)][who]["misrouted"].get<std::uint64_t>();
            row[who]["misrouted"] = misrouted;
        }
        row["ratio_rate"] = median_of(rounds, k + "ratio_rate");
        row["ratio_cpu_per_line"] = median_of(rounds, k + "ratio_cpu_per_line");
        row["ratio_lines_per_cpu_s"] = median_of(rounds, k + "ratio_lines_per_cpu_s");
        row["ratio_group_cpu_per_line"] = median_of(rounds, k + "ratio_group_cpu_per_line");
        summary[std::to_string(s)] = row;
    }
    return {{"messages_per_measure", p.throughput_messages},
            {"pipeline_depth", p.pipeline_depth},
            {"rounds", rounds},
            {"summary", summary}};
}

}  // namespace bench
