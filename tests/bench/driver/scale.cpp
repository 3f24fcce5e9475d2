// 4. Scale and memory: mcpd's RSS with many configured servers and with many idle sessions
// (on the control socket, on passed pipes, and group sessions over two servers), the relay's
// per connection, and what one idle
// `mcpctl connect` costs (RSS, and private memory from smaps_rollup).
#include <stdexcept>

#include "figures.h"
#include "proc.h"

namespace bench {
namespace {

// Let allocations settle and RSS catch up before reading it.
Memory settled(pid_t pid) {
    sleep_ms(300);
    return full_memory(pid);
}

Json per_item(const Memory& before, const Memory& after, int items) {
    const double n = static_cast<double>(items);
    return {
        {"items", items},
        {"rss_before_kib", before.rss_kib},
        {"rss_after_kib", after.rss_kib},
        {"rss_kib_per_item",
         (static_cast<double>(after.rss_kib) - static_cast<double>(before.rss_kib)) / n},
        {"private_kib_per_item",
         (static_cast<double>(after.private_kib) - static_cast<double>(before.private_kib)) / n}};
}

Json servers(const Config& config) {
    const Profile& p = config.profile;
    TempDir dir;
    Memory one, many;
    {
        Mcpd mcpd(config.bin, dir, "one");
        Session s = mcpd.attach();
        one = settled(mcpd.pid());
    }
    McpdOptions options;
    options.servers = p.idle_servers;
    options.start_timeout_ms = 120000;
    Mcpd mcpd(config.bin, dir, "many", options);
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (mcpd.running_servers() < p.idle_servers) {
        if (Clock::now() > deadline) throw std::runtime_error("scale: servers did not all start");
        sleep_ms(100);
    }
    Session s = mcpd.attach();
    many = settled(mcpd.pid());
    Json j = per_item(one, many, p.idle_servers - 1);
    j["servers"] = p.idle_servers;
    return j;
}

template <typename Open>
Json sessions(pid_t pid, int count, Open&& open) {
    std::vector<Session> idle;
    idle.push_back(open());
    const Memory before = settled(pid);
    for (int i = 0; i < count; ++i) idle.push_back(open());
    const Memory after = settled(pid);
    return per_item(before, after, count);
}

Json bridges(const Config& config) {
    TempDir dir;
    Mcpd mcpd(config.bin, dir, "mcpd");
    std::vector<Session> open;
    for (int i = 0; i < config.profile.idle_bridges; ++i) open.push_back(mcpd.connect());
    sleep_ms(300);
    std::vector<double> rss, priv, pss;
    for (Session& s : open) {
        const Memory m = full_memory(s.process->pid());
        rss.push_back(static_cast<double>(m.rss_kib));
        priv.push_back(static_cast<double>(m.private_kib));
        pss.push_back(static_cast<double>(m.pss_kib));
    }
    return {{"bridges", open.size()},
            {"rss_kib", median(rss)},
            {"private_kib", median(priv)},
            {"pss_kib", median(pss)}};
}

}  // namespace

Json run_scale(const Config& config) {
    const Profile& p = config.profile;
    Json result;
    result["servers"] = servers(config);
    note("scale: " + std::to_string(p.idle_servers) + " servers: " +
         std::to_string(result["servers"]["rss_kib_per_item"].get<double>()) + " KiB each");
    {
        TempDir dir;
        Mcpd mcpd(config.bin, dir, "socket");
        result["socket_sessions"] =
            sessions(mcpd.pid(), p.idle_sessions, [&] { return mcpd.attach(); });
    }
    {
        TempDir dir;
        Mcpd mcpd(config.bin, dir, "fds");
        result["fd_sessions"] =
            sessions(mcpd.pid(), p.idle_sessions, [&] { return mcpd.attach_fds(); });
    }
    {
        // A group session holds a member session on each server: what an idle one costs.
        TempDir dir;
        McpdOptions options;
        options.servers = 2;
        options.pair_group = true;
        Mcpd mcpd(config.bin, dir, "group", options);
        result["group_sessions"] =
            sessions(mcpd.pid(), p.idle_sessions, [&] { return mcpd.attach("pair"); });
    }
    {
        TempDir dir;
        Relay relay(config.bin, dir, "relay");
        result["relay_connections"] =
            sessions(relay.pid(), p.idle_sessions, [&] { return relay.connect(); });
    }
    note("scale: " + std::to_string(p.idle_sessions) + " idle sessions: " +
         std::to_string(result["socket_sessions"]["rss_kib_per_item"].get<double>()) +
         " KiB each on the socket, " +
         std::to_string(result["fd_sessions"]["rss_kib_per_item"].get<double>()) +
         " KiB on passed pipes, " +
         std::to_string(result["group_sessions"]["rss_kib_per_item"].get<double>()) +
         " KiB for a group of two servers");
    result["mcpctl_connect"] = bridges(config);
    return result;
}

}  // namespace bench
