// What /proc says about processes: parents, states, and the marker variable tests put in the
// environment of the servers they register, so children and grandchildren can be found
// without guessing pids.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace integration {

// The variable the tests set in `env` of their registry entries.
inline constexpr const char* kMarkerVariable = "MCPD_TEST_MARKER";

// The state letter of /proc/PID/stat (R, S, D, Z, T, ...); nullopt when there is no such pid.
std::optional<char> process_state(pid_t pid);

// Whether `pid` exists and is not a zombie.
bool process_alive(pid_t pid);

// The command name of /proc/PID/comm, empty when the pid is gone.
std::string process_name(pid_t pid);

// The NUL-separated arguments of /proc/PID/cmdline, empty when the pid is gone.
std::string process_cmdline(pid_t pid);

// Every pid in /proc now.
std::vector<pid_t> all_processes();

// The pids of `pids` whose command name is `name`.
std::vector<pid_t> named(const std::vector<pid_t>& pids, const std::string& name);

// Every pid whose parent is `parent`, zombies included.
std::vector<pid_t> children_of(pid_t parent);

// The children of `parent` in state Z.
std::vector<pid_t> zombie_children_of(pid_t parent);

// Every live process whose environment holds MCPD_TEST_MARKER=`marker`.
std::vector<pid_t> processes_with_marker(const std::string& marker);

// VmRSS of /proc/PID/status in bytes; nullopt when there is no such process.
std::optional<std::size_t> resident_bytes(pid_t pid);

// The real uid a process runs as (/proc/PID/status), or nullopt once it is gone.
std::optional<uid_t> process_real_uid(pid_t pid);

// How many descriptors the process has open (entries of /proc/PID/fd); nullopt when gone.
std::optional<std::size_t> open_fd_count(pid_t pid);

// User plus system CPU time the process has used, in milliseconds (/proc/PID/stat).
std::optional<long long> cpu_time_ms(pid_t pid);

// "123 (sleep, S, parent 45)" per pid, for failure messages.
std::string describe_processes(const std::vector<pid_t>& pids);

}  // namespace integration
