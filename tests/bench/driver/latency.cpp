// 1. Latency: sequential small tools/call echo round trips, one at a time, through each set-up
// (and through a group of the demo server and another, on the same mcpd as the plain attach).
// The set-ups take turns every `latency_chunk` calls, so load on the machine falls on all of
// them alike; the CPU time of the processes in between is read around each turn.
#include <sched.h>

#include <cstdio>

#include "figures.h"
#include "proc.h"

namespace bench {

std::uint64_t cpu_of(const std::vector<pid_t>& pids) {
    std::uint64_t total = 0;
    for (const pid_t pid : pids) total += cpu_ns(pid);
    return total;
}

void note(const std::string& text) {
    std::fprintf(stderr, "bench: %s\n", text.c_str());
    std::fflush(stderr);
}

namespace {

struct Path {
    std::string name;
    Session* session;
    std::vector<pid_t> middle;  // the processes between the client and the server
    std::vector<double> samples_us;
    std::uint64_t middle_cpu_ns = 0;
};

// Keeps this process, and so every process it starts meanwhile, on one CPU (or lets it run
// anywhere with cpu < 0); the previous affinity comes back on destruction.
class CpuPin {
public:
    explicit CpuPin(int cpu) {
        ::sched_getaffinity(0, sizeof saved_, &saved_);
        if (cpu < 0) return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ::sched_setaffinity(0, sizeof one, &one);
    }
    ~CpuPin() { ::sched_setaffinity(0, sizeof saved_, &saved_); }
    CpuPin(const CpuPin&) = delete;
    CpuPin& operator=(const CpuPin&) = delete;

private:
    cpu_set_t saved_;
};

Json latency(const Config& config, int cpu) {
    const Profile& p = config.profile;
    const CpuPin pin(cpu);
    TempDir dir;
    Direct direct(config.bin, dir);
    Relay relay(config.bin, dir, "relay");
    Session relay_one = relay.connect();
    Session relay_two = relay.bridge();
    McpdOptions options;
    options.servers = 2;
    options.pair_group = true;
    Mcpd mcpd(config.bin, dir, "mcpd", options);
    Session attach = mcpd.attach();
    Session connect = mcpd.connect();
    // The same server's echo through a group of it and demo2 (docs/GROUPS.md).
    Session group = mcpd.attach("pair");
    group.echo_tool = "demo__echo";

    std::vector<Path> paths = {
        {"direct", &direct.session(), {}, {}, 0},
        {"relay", &relay_one, {relay.pid()}, {}, 0},
        {"relay_2hop", &relay_two, {relay.pid(), relay_two.process->pid()}, {}, 0},
        {"mcpd_attach", &attach, {mcpd.pid()}, {}, 0},
        {"mcpctl_connect", &connect, {mcpd.pid(), connect.process->pid()}, {}, 0},
        {"mcpd_group_attach", &group, {mcpd.pid()}, {}, 0},
    };
    const std::string text = "hello";
    for (Path& path : paths) {
        for (int i = 0; i < 200; ++i) path.session->echo(text);
    }

    Json rounds = Json::array();
    for (int round = 0; round < p.rounds; ++round) {
        for (Path& path : paths) {
            path.samples_us.clear();
            path.middle_cpu_ns = 0;
        }
        for (int done = 0; done < p.latency_calls; done += p.latency_chunk) {
            for (Path& path : paths) {
                const std::uint64_t cpu_before = cpu_of(path.middle);
                for (int i = 0; i < p.latency_chunk; ++i) {
                    const auto start = Clock::now();
                    path.session->echo(text);
                    path.samples_us.push_back(seconds_since(start) * 1e6);
                }
                path.middle_cpu_ns += cpu_of(path.middle) - cpu_before;
            }
        }
        Json r;
        for (const Path& path : paths) {
            const double calls = static_cast<double>(path.samples_us.size());
            r[path.name] = {
                {"p50_us", percentile(path.samples_us, 50)},
                {"p99_us", percentile(path.samples_us, 99)},
                {"middle_cpu_us", static_cast<double>(path.middle_cpu_ns) / 1e3 / calls}};
        }
        for (const char* q : {"p50_us", "p99_us"}) {
            const std::string k = q;
            r["ratio_attach_vs_relay"][k] =
                r["mcpd_attach"][k].get<double>() / r["relay"][k].get<double>();
            r["ratio_connect_vs_relay_2hop"][k] =
                r["mcpctl_connect"][k].get<double>() / r["relay_2hop"][k].get<double>();
            r["ratio_connect_vs_relay"][k] =
                r["mcpctl_connect"][k].get<double>() / r["relay"][k].get<double>();
            r["ratio_group_vs_attach"][k] =
                r["mcpd_group_attach"][k].get<double>() / r["mcpd_attach"][k].get<double>();
        }
        r["load"] = load_average();
        note(std::string("latency ") + (cpu < 0 ? "unpinned" : "pinned") + " round " +
             std::to_string(round + 1) + ": p50 direct " +
             std::to_string(r["direct"]["p50_us"].get<double>()) + " us, relay " +
             std::to_string(r["relay"]["p50_us"].get<double>()) + " us, mcpd attach " +
             std::to_string(r["mcpd_attach"]["p50_us"].get<double>()) + " us, through a group " +
             std::to_string(r["mcpd_group_attach"]["p50_us"].get<double>()) + " us");
        rounds.push_back(r);
    }

    Json summary;
    for (const Path& path : paths) {
        for (const char* k : {"p50_us", "p99_us", "middle_cpu_us"}) {
            summary[path.name][k] = median_of(rounds, "/" + path.name + "/" + k);
        }
    }
    for (const char* ratio : {"ratio_attach_vs_relay", "ratio_connect_vs_relay_2hop",
                              "ratio_connect_vs_relay", "ratio_group_vs_attach"}) {
        for (const char* k : {"p50_us", "p99_us"}) {
            summary[ratio][k] = median_of(rounds, std::string("/") + ratio + "/" + k);
        }
    }
    return {{"calls_per_round", p.latency_calls},
            {"cpu", cpu},
            {"rounds", rounds},
            {"summary", summary}};
}

}  // namespace

Json run_latency(const Config& config) {
    // Pinned: every process of every set-up on the last CPU, so a round trip costs the sum of
    // the work of the processes on its path, whatever the scheduler would have placed where.
    // Unpinned: as the scheduler places them.
    const int last_cpu = machine().cores - 1;
    return {{"pinned", latency(config, last_cpu)}, {"unpinned", latency(config, -1)}};
}

}  // namespace bench
