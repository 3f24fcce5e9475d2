#include "daemon/stats_report.h"

#include <unistd.h>

#include <array>
#include <map>
#include <string>

#include "daemon/managed_server.h"
#include "daemon/server_pool.h"
#include "daemon/session_table.h"

namespace mcpd {

using json = nlohmann::json;

namespace {

json latency_json(const LatencyHistogram& h) {
    json buckets = json::array();
    for (std::size_t i = 0; i < LatencyHistogram::kBuckets; ++i) {
        const json bound = i < LatencyHistogram::kBoundsUs.size() ? json(LatencyHistogram::kBoundsUs[i])
                                                                  : json(nullptr);
        buckets.push_back(json::array({bound, h.buckets()[i]}));
    }
    return {{"count", h.count()},
            {"sum_us", h.sum_us()},
            {"p50_us", h.percentile_us(50)},
            {"p90_us", h.percentile_us(90)},
            {"p99_us", h.percentile_us(99)},
            {"buckets", std::move(buckets)}};
}

// Each name's counters as a "tools" entry.
void add_names(json& out, const TrafficStats::Names& names, bool tools) {
    for (const auto& [name, counters] : names) {
        json entry = counters_json(counters);
        entry["method"] = tools ? std::string("tools/call") : name;
        entry["tool"] = tools ? json(name) : json(nullptr);
        out.push_back(std::move(entry));
    }
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

namespace {

// What became of requests in flight when a child died, by verdict (docs/STATS.md).
json replays_json(const std::array<std::uint64_t, std::size(kReplayVerdicts)>& counts) {
    json out = json::object();
    for (std::size_t i = 0; i < counts.size(); ++i)
        out[std::string(to_string(kReplayVerdicts[i]))] = counts[i];
    return out;
}

}  // namespace

json counters_json(const CallCounters& c) {
    return {{"requests", c.requests},   {"replies", c.replies},     {"errors", c.errors},
            {"tool_errors", c.tool_errors}, {"cancelled", c.cancelled}, {"timeouts", c.timeouts},
            {"child_died", c.child_died}, {"replayed", c.replayed}, {"in_flight", c.in_flight},
            {"bytes_in", c.bytes_in},
            {"bytes_out", c.bytes_out}, {"latency", latency_json(c.latency)}};
}

namespace {

json peak_json(const std::optional<ProcessUsage>& usage, std::optional<std::uint64_t> cgroup);

std::optional<std::uint64_t> leaf_peak(const ManagedServer& instance) {
    const std::optional<sandbox::CgroupUsage> leaf = instance.cgroup().usage();
    return leaf ? leaf->peak_bytes : std::nullopt;
}

// One live child of a server (docs/STATS.md, "per_child"): what it is, its process (as
// `mcpctl status` shows it) and what its own sessions asked of it.
json child_json(const ManagedServer& instance, const ServerPool::InstanceRole& role,
                const TrafficStats& stats, const std::optional<ProcessUsage>& usage) {
    const json status = instance.status_json();
    json child = {{"kind", role.kind},
                  {"pid", status["pid"]},
                  {"state", status["state"]},
                  {"sessions", instance.router().session_count()},
                  {"restarts", status["restarts"]},
                  {"cpu_ms", usage ? json(usage->cpu_ms) : json(nullptr)},
                  {"rss_bytes", usage ? json(usage->rss_bytes) : json(nullptr)},
                  {"peak_rss_bytes", peak_json(usage, leaf_peak(instance))},
                  {"totals", counters_json(stats.total())}};
    if (role.project != nullptr) child["project"] = role.project->directory;
    return child;
}

// The peak memory of a server's processes: its cgroup leaves' own, else each live process's
// peak summed (an upper bound); null when neither is known.
json peak_json(const std::optional<ProcessUsage>& usage, std::optional<std::uint64_t> cgroup) {
    if (cgroup) return *cgroup;
    if (usage && usage->peak_bytes) return *usage->peak_bytes;
    return nullptr;
}

// A child that serves one session (exclusive) or one project: it says whose work it is.
bool private_child(const ServerPool::InstanceRole& role) {
    return role.kind == "exclusive" || role.kind == "project";
}

}  // namespace

json StatsReport::build(const std::vector<const ManagedServer*>& servers, const ServerPool& pool,
                        const SessionTable& sessions, Want want, Duration uptime,
                        const PeerCredentials* asking) {
    const TimePoint now = Clock::now();
    // /proc is read once for every server asked about.
    const ProcessTable processes = ProcessTable::read();
    json list = json::array();
    for (const ManagedServer* entry : servers)
        list.push_back(server_json(*entry, pool, sessions, processes, want, now, asking));
    return {{"uptime_ms", std::chrono::duration_cast<std::chrono::milliseconds>(uptime).count()},
            {"servers", std::move(list)}};
}

json StatsReport::server_json(const ManagedServer& entry, const ServerPool& pool,
                              const SessionTable& sessions, const ProcessTable& processes,
                              Want want, TimePoint now, const PeerCredentials* asking) {
    const std::string& name = entry.name();
    TrafficStats merged;
    if (const TrafficStats* gone = pool.gone_stats(name)) merged.absorb(*gone);
    std::map<SessionId, CallCounters> by_session;
    std::map<SessionId, const SessionSummary*> clients;
    std::vector<SessionSummary> summaries;
    double recent = 0;
    std::size_t children = 0, attached = 0;
    unsigned restarts = 0;
    std::uint64_t from_cache = 0;
    std::array<std::uint64_t, std::size(kReplayVerdicts)> replays{};
    std::map<std::string, unsigned> reasons;
    std::optional<ProcessUsage> usage;
    // From the cgroup leaves where mcpd has them: the tree's own peak, and OOM kills.
    std::optional<std::uint64_t> cgroup_peak;
    bool every_peak_from_cgroup = true;
    std::optional<std::uint64_t> oom_kills;
    json per_child = json::array();
    pool.for_each_instance([&](const ManagedServer& instance, const ServerPool::InstanceRole& role) {
        if (instance.name() != name) return;
        const TrafficStats& stats = instance.router().stats();
        merged.absorb(stats);
        recent += stats.recent().per_second(now);
        if (want.sessions) {
            instance.router().for_each_session_counters(
                [&](SessionId id, const CallCounters& counters) { by_session[id].merge(counters); });
        }
        attached += instance.router().session_count();
        restarts += instance.supervisor().restarts();
        from_cache += instance.router().answered_from_cache();
        if (const std::optional<std::uint64_t> kills = instance.cgroup().oom_kills())
            oom_kills = oom_kills.value_or(0) + *kills;
        for (std::size_t i = 0; i < replays.size(); ++i)
            replays[i] += instance.router().replay().count_of(kReplayVerdicts[i]);
        for (const auto& [reason, count] : instance.supervisor().restart_reasons())
            reasons[reason] += count;
        if (want.sessions) {
            for (SessionSummary& summary : instance.router().summaries())
                summaries.push_back(std::move(summary));
        }
        if (const std::optional<ServerMark> mark = instance.process_mark()) {
            children += 1;
            const std::optional<sandbox::CgroupUsage> leaf = instance.cgroup().usage();
            if (leaf && leaf->peak_bytes) {
                cgroup_peak = cgroup_peak.value_or(0) + *leaf->peak_bytes;
            } else {
                every_peak_from_cgroup = false;
            }
            const std::optional<ProcessUsage> sampled =
                sampler_.sample(processes, *mark, ::getpid(), now);
            if (want.children && (asking == nullptr || !private_child(role) ||
                                  sessions.any_visible(instance, *asking)))
                per_child.push_back(child_json(instance, role, stats, sampled));
            if (sampled) {
                if (usage) {
                    *usage += *sampled;
                } else {
                    usage = *sampled;
                }
            }
        }
    });
    const CallCounters total = merged.total();
    const double since = seconds(now - pool.added_at(name));
    const std::uint64_t settled = total.requests - std::min(total.requests, total.in_flight);

    json out = {{"name", name},
                {"state", to_string(entry.supervisor().state())},
                {"children", children},
                {"sessions", attached},
                {"sessions_total", merged.sessions_total()},
                {"restarts", restarts},
                {"answered_from_cache", from_cache},
                {"replays", replays_json(replays)},
                {"restart_reasons", reasons},
                {"cpu_ms", usage ? json(usage->cpu_ms) : json(nullptr)},
                {"cpu_percent", usage ? json(usage->cpu_percent) : json(nullptr)},
                {"rss_bytes", usage ? json(usage->rss_bytes) : json(nullptr)},
                {"pss_bytes", usage && usage->pss_bytes ? json(*usage->pss_bytes) : json(nullptr)},
                {"peak_rss_bytes", peak_json(usage, every_peak_from_cgroup ? cgroup_peak
                                                                           : std::nullopt)},
                {"oom_kills", oom_kills ? json(*oom_kills) : json(nullptr)},
                {"calls_per_s_10s", recent},
                {"calls_per_s", since > 0 ? static_cast<double>(settled) / since : 0.0},
                {"totals", counters_json(total)}};
    if (want.children) out["per_child"] = std::move(per_child);
    if (want.tools) {
        json tools = json::array();
        add_names(tools, merged.tools(), true);
        add_names(tools, merged.methods(), false);
        out["tools"] = std::move(tools);
    }
    if (want.sessions) {
        for (const SessionSummary& summary : summaries) {
            clients[summary.id] = &summary;
            by_session[summary.id];  // listed before its first request too
        }
        json list = json::array();
        for (const auto& [id, counters] : by_session) {
            if (asking != nullptr && !sessions.visible_to(id, *asking)) continue;
            json session = counters_json(counters);
            session["id"] = id;
            if (const auto client = clients.find(id);
                client != clients.end() && !client->second->client_name.empty()) {
                session["client"] = {{"name", client->second->client_name},
                                     {"version", client->second->client_version}};
            }
            if (const std::optional<PeerCredentials> peer = sessions.peer_of(id)) {
                session["pid"] = peer->pid;
                session["uid"] = peer->uid;
            }
            list.push_back(std::move(session));
        }
        out["sessions_detail"] = std::move(list);
    }
    return out;
}

}  // namespace mcpd
