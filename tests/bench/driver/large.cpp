// 3. Large payloads: tools/call large results of 1 to 64 MiB through the minimal relay and
// through mcpd (which validates every byte of them). Each measure starts a fresh set-up, so
// "idle" is the same for every size: RSS after the handshake and a few small calls. Peak RSS
// comes from VmHWM, reset just before the transfer.
#include "figures.h"
#include "proc.h"

namespace bench {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

struct Transfer {
    double cpu_ms_per_mib = 0;
    double idle_kib = 0;
    double peak_above_idle_kib = 0;
    double retained_kib = 0;  // RSS above idle once the transfers are over
    double minor_faults_per_mib = 0;
    double seconds = 0;
};

// `calls` results of `bytes` through `session`, watching `middle`.
Transfer transfer(Session& session, pid_t middle, std::size_t bytes, int calls) {
    for (int i = 0; i < 5; ++i) session.echo("warm up");
    sleep_ms(50);
    Transfer t;
    t.idle_kib = static_cast<double>(status_memory(middle).rss_kib);
    reset_peak_rss(middle);
    const std::uint64_t cpu_before = cpu_ns(middle);
    const std::uint64_t faults_before = minor_faults(middle);
    const auto start = Clock::now();
    for (int i = 0; i < calls; ++i) {
        const std::size_t got = session.large(bytes);
        if (got < bytes) throw std::runtime_error("large: a short reply");
    }
    t.seconds = seconds_since(start);
    const double cpu_ms = static_cast<double>(cpu_ns(middle) - cpu_before) / 1e6;
    t.cpu_ms_per_mib =
        cpu_ms / (static_cast<double>(bytes * static_cast<std::size_t>(calls)) / kMiB);
    t.peak_above_idle_kib = static_cast<double>(status_memory(middle).hwm_kib) - t.idle_kib;
    t.minor_faults_per_mib = static_cast<double>(minor_faults(middle) - faults_before) /
                             (static_cast<double>(bytes * static_cast<std::size_t>(calls)) / kMiB);
    sleep_ms(300);
    t.retained_kib = static_cast<double>(status_memory(middle).rss_kib) - t.idle_kib;
    return t;
}

Json as_json(const Transfer& t, std::size_t bytes) {
    return {{"cpu_ms_per_mib", t.cpu_ms_per_mib},
            {"idle_kib", t.idle_kib},
            {"peak_above_idle_kib", t.peak_above_idle_kib},
            {"peak_above_idle_x_size", t.peak_above_idle_kib * 1024 / static_cast<double>(bytes)},
            {"retained_kib", t.retained_kib},
            {"minor_faults_per_mib", t.minor_faults_per_mib},
            {"seconds", t.seconds}};
}

}  // namespace

Json run_large(const Config& config) {
    const Profile& p = config.profile;
    const std::size_t biggest = *std::max_element(p.sizes_mib.begin(), p.sizes_mib.end()) * kMiB;
    McpdOptions options;
    // Room for the biggest result and its envelope (the default limit is 16 MiB).
    options.max_message_bytes = biggest + biggest / 2;
    Json rounds = Json::array();
    for (int round = 0; round < p.rounds; ++round) {
        Json r;
        for (const std::size_t mib : p.sizes_mib) {
            const std::size_t bytes = mib * kMiB;
            const int calls =
                static_cast<int>(std::max<std::size_t>(1, p.large_bytes_per_measure / mib));
            TempDir dir;
            Json rel, own;
            {
                Relay relay(config.bin, dir, "relay");
                Session s = relay.connect();
                rel = as_json(transfer(s, relay.pid(), bytes, calls), bytes);
            }
            {
                Mcpd mcpd(config.bin, dir, "mcpd", options);
                Session s = mcpd.attach();
                own = as_json(transfer(s, mcpd.pid(), bytes, calls), bytes);
            }
            r[std::to_string(mib)] = {{"relay", rel},
                                      {"mcpd", own},
                                      {"calls", calls},
                                      {"ratio_cpu", own["cpu_ms_per_mib"].get<double>() /
                                                        rel["cpu_ms_per_mib"].get<double>()}};
        }
        r["load"] = load_average();
        const std::string last = std::to_string(p.sizes_mib.back());
        note("large round " + std::to_string(round + 1) + ": " + last + " MiB: relay " +
             std::to_string(r[last]["relay"]["cpu_ms_per_mib"].get<double>()) + " ms/MiB, mcpd " +
             std::to_string(r[last]["mcpd"]["cpu_ms_per_mib"].get<double>()) + " ms/MiB");
        rounds.push_back(r);
    }
    Json summary;
    for (const std::size_t mib : p.sizes_mib) {
        const std::string k = "/" + std::to_string(mib) + "/";
        Json row;
        for (const char* who : {"relay", "mcpd"}) {
            for (const char* f :
                 {"cpu_ms_per_mib", "idle_kib", "peak_above_idle_kib", "peak_above_idle_x_size",
                  "retained_kib", "minor_faults_per_mib", "seconds"}) {
                row[who][f] = median_of(rounds, k + who + "/" + f);
            }
        }
        row["ratio_cpu"] = median_of(rounds, k + "ratio_cpu");
        summary[std::to_string(mib)] = row;
    }
    return {
        {"max_message_bytes", options.max_message_bytes}, {"rounds", rounds}, {"summary", summary}};
}

}  // namespace bench
