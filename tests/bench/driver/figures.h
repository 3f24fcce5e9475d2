// The figures of docs/PERFORMANCE.md that need no npm software, one function each. Every one
// takes its set-ups side by side in the same run and reports, per round, the mcpd figure, the
// minimal relay's, and their ratio; the summary is the median over the rounds.
#pragma once

#include <algorithm>
#include <charconv>
#include <string_view>
#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "setups.h"

namespace bench {

using Json = nlohmann::json;

struct Profile {
    int rounds = 5;
    // 1. latency
    int latency_calls = 3000;  // per set-up and round
    int latency_chunk = 100;   // set-ups take turns every this many calls
    // 2. throughput (and 2b, HTTP sessions: one request in flight each)
    std::vector<int> sessions = {1, 8, 64, 512};
    int throughput_messages = 30000;  // per set-up, session count and round
    int pipeline_depth = 8;           // requests in flight per session
    std::vector<int> http_sessions = {1, 8, 32};
    int http_messages = 6000;  // per set-up, session count and round
    // 3. large payloads
    std::vector<std::size_t> sizes_mib = {1, 4, 16, 64};
    std::size_t large_bytes_per_measure = 32;  // MiB moved per measure (at least one call)
    // 4. scale
    int idle_servers = 100;
    int idle_sessions = 1000;
    int idle_bridges = 5;
    // 5. a server's start with and without its sandbox
    int sandbox_starts = 40;  // per set-up and round
    // 9. upgrades in place under 16 pipelining sessions
    int upgrades = 10;
    // deterministic CPU
    bool callgrind = true;
    int callgrind_calls = 2000;
};

struct Config {
    Binaries bin;
    Profile profile;
    std::string valgrind;  // path, empty when absent
    // Where each callgrind output is copied (as RUN.out) for callgrind_annotate; empty: nowhere.
    std::string keep_profiles;
};

Json run_latency(const Config& config);
Json run_throughput(const Config& config);
Json run_http(const Config& config);
Json run_large(const Config& config);
Json run_scale(const Config& config);
Json run_callgrind(const Config& config);
Json run_sandbox(const Config& config);
Json run_upgrade(const Config& config);

// What one pipelined run through a process in between measured.
struct Measure {
    double seconds = 0;
    std::uint64_t messages = 0;
    std::uint64_t middle_cpu_ns = 0;
    std::uint64_t server_cpu_ns = 0;
    std::uint64_t misrouted = 0;
};

// `messages` echo round trips spread over the first `count` of `sessions`, each keeping
// `depth` requests in flight; CPU of `middle` (the relay or mcpd) and of `server`.
Measure pipeline(std::vector<Session>& sessions, std::size_t count, int messages, int depth,
                 pid_t middle, pid_t server);

// --- small helpers shared by the figures ---

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// The p-th percentile (0..100) by nearest rank; 0 for no values.
inline double percentile(std::vector<double> values, double p) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(values.size()));
    return values[std::min(rank, values.size() - 1)];
}

inline double median(const std::vector<double>& values) {
    if (values.empty()) return 0;
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The median over rounds of the number at `key` in each round object.
inline double median_of(const Json& rounds, const std::string& key) {
    std::vector<double> v;
    for (const Json& r : rounds) v.push_back(r.at(Json::json_pointer(key)).get<double>());
    return median(v);
}

// The integer after the first "id": in a reply `line`, or -1.
inline long long reply_id(std::string_view line) {
    const auto at = line.find("\"id\":");
    if (at == std::string_view::npos) return -1;
    long long id = -1;
    std::from_chars(line.data() + at + 5, line.data() + line.size(), id);
    return id;
}

// Summed CPU nanoseconds of `pids`.
std::uint64_t cpu_of(const std::vector<pid_t>& pids);

// Progress on stderr, so a long run shows where it is.
void note(const std::string& text);

}  // namespace bench
