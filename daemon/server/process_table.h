// What /proc says about every process at one moment: parent, process group, session, state and
// start time. Enough to find a server's processes that left its process group, and to tell a
// process from a later one that reused its pid.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mcpd {

struct ProcessEntry {
    pid_t pid = 0;
    pid_t ppid = 0;
    pid_t pgid = 0;
    pid_t sid = 0;
    char state = '?';                 // R, S, D, Z, T, ...
    unsigned long long start_time = 0;  // clock ticks after boot: with the pid, an identity
    unsigned long long user_ticks = 0, system_ticks = 0;  // CPU time used, in clock ticks
    unsigned long long rss_pages = 0;                      // resident set, in pages
};

// Parse the text of /proc/PID/stat. The command name may hold spaces and parentheses, so the
// fields are read after its last ')'.
std::optional<ProcessEntry> parse_process_stat(std::string_view text);

// /proc/PID/stat of one process; nullopt when it is gone.
std::optional<ProcessEntry> read_process_entry(pid_t pid);

// Whether the environment `pid` was started with holds exactly `entry` ("KEY=VALUE"). False
// when it cannot be read (gone, or another user's).
bool process_environment_has(pid_t pid, std::string_view entry);

class ProcessTable {
public:
    // Every process /proc lists now; one that exits while it is read is left out.
    static ProcessTable read();
    // From given entries (for tests).
    explicit ProcessTable(std::vector<ProcessEntry> entries);

    const std::vector<ProcessEntry>& entries() const { return entries_; }
    const ProcessEntry* find(pid_t pid) const;
    // Whether `pid` is `ancestor` or below it, following parents.
    bool descends_from(pid_t pid, pid_t ancestor) const;

private:
    std::vector<ProcessEntry> entries_;
    std::unordered_map<pid_t, std::size_t> index_;
};

}  // namespace mcpd
