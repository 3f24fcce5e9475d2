// What /proc says about a process (CPU time, memory) and about the machine.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// CPU time (user + system) of `pid` in nanoseconds: /proc/PID/schedstat when the kernel has it
// (nanosecond resolution), else utime + stime of /proc/PID/stat (clock ticks). 0 when gone.
std::uint64_t cpu_ns(pid_t pid);
// Whether cpu_ns() reads schedstat (true) or the coarser stat ticks (false).
bool cpu_has_ns_resolution();

// Minor page faults of `pid` so far (/proc/PID/stat).
std::uint64_t minor_faults(pid_t pid);

struct Memory {
    std::uint64_t rss_kib = 0;      // VmRSS
    std::uint64_t hwm_kib = 0;      // VmHWM: peak RSS since start or the last reset
    std::uint64_t pss_kib = 0;      // smaps_rollup Pss
    std::uint64_t private_kib = 0;  // smaps_rollup Private_Clean + Private_Dirty
};

// VmRSS and VmHWM only (cheap); pss and private stay 0.
Memory status_memory(pid_t pid);
// Everything, smaps_rollup included.
Memory full_memory(pid_t pid);
// Reset VmHWM to the current RSS (writes 5 to /proc/PID/clear_refs); false when not allowed.
bool reset_peak_rss(pid_t pid);

// The machine: CPU model, cores, kernel, load.
struct Machine {
    std::string cpu_model;
    int cores = 0;
    std::string kernel;
    double load1 = 0, load5 = 0, load15 = 0;
};
Machine machine();
// The 1-minute load average now.
double load_average();

}  // namespace bench
