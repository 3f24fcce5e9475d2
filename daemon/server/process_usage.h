// What a server's processes cost now: CPU time, resident and proportional memory, read from
// /proc for every process of the server (its process group, its session, its tag and their
// descendants: server_processes.h), grandchildren included.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>

#include "common/clock.h"
#include "daemon/server/process_table.h"
#include "daemon/server/server_processes.h"

namespace mcpd {

struct ProcessUsage {
    std::size_t processes = 0;
    std::uint64_t cpu_ms = 0;     // user + system time of the live processes
    std::uint64_t rss_bytes = 0;  // resident set, summed
    // Proportional set (shared pages divided among their users), summed; none when a
    // process's /proc/PID/smaps_rollup could not be read (another user's, an old kernel).
    std::optional<std::uint64_t> pss_bytes;
    // The peak resident set of each live process (VmHWM), summed: an upper bound of the
    // tree's peak; none when a process's /proc/PID/status could not be read.
    std::optional<std::uint64_t> peak_bytes;
    // CPU use in percent of one CPU: since the previous sample of the same server process,
    // or over the processes' lifetime for the first.
    double cpu_percent = 0;

    // Another process tree's usage added (a server's several children): PSS stays known only
    // while both are.
    ProcessUsage& operator+=(const ProcessUsage& more);
};

// The VmHWM line of /proc/PID/status, in bytes.
std::optional<std::uint64_t> parse_peak(std::string_view status);

// The Pss line of /proc/PID/smaps_rollup, in bytes.
std::optional<std::uint64_t> parse_pss(std::string_view smaps_rollup);

// Samples servers' processes, remembering each server's previous sample for the CPU rate.
class UsageSampler {
public:
    // The usage of the server marked `mark` (a child of mcpd `within`) in `table`; none when
    // the server has no live process there.
    std::optional<ProcessUsage> sample(const ProcessTable& table, const ServerMark& mark,
                                       pid_t within, TimePoint now);

private:
    struct Previous {
        unsigned long long leader_start = 0;  // with the leader's pid, which process it was
        std::uint64_t cpu_ms = 0;
        TimePoint at{};
    };
    std::map<pid_t, Previous> previous_;  // by leader pid
};

}  // namespace mcpd
