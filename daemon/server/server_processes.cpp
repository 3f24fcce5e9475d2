#include "daemon/server/server_processes.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/unique_fd.h"

namespace mcpd {
namespace {

// Rounds of find-and-kill: each catches what forked while the one before was finding.
constexpr int kKillRounds = 8;

// Signal the process `entry` describes, and no later one that reused its pid: a pidfd pins
// the process, then its start time is compared with the one that was found.
bool signal_exactly(const ProcessEntry& entry, int signo) {
    const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, entry.pid, 0)));
    const bool pinned = static_cast<bool>(pidfd);
    if (!pinned && errno != ENOSYS) return false;  // gone
    const auto now = read_process_entry(entry.pid);
    if (!now || now->start_time != entry.start_time) return false;
    if (!pinned) return ::kill(entry.pid, signo) == 0;  // kernels before 5.3
    return ::syscall(SYS_pidfd_send_signal, pidfd.get(), signo, nullptr, 0) == 0;
}

using Identity = std::pair<pid_t, unsigned long long>;

// Find with `find`, SIGKILL, again, until a round finds nothing. Returns who was killed.
template <typename Find>
std::set<Identity> kill_until_none(Find find) {
    std::set<Identity> killed;
    for (int round = 0; round < kKillRounds; ++round) {
        const ProcessTable table = ProcessTable::read();
        const std::vector<const ProcessEntry*> found = find(table);
        if (found.empty()) break;
        bool any_new = false;
        for (const ProcessEntry* entry : found) {
            const Identity identity{entry->pid, entry->start_time};
            if (killed.contains(identity)) continue;  // still dying from the last round
            if (signal_exactly(*entry, SIGKILL)) {
                killed.insert(identity);
                any_new = true;
            }
        }
        // Only processes still on their way out: give them a moment to become zombies.
        if (!any_new) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return killed;
}

}  // namespace

std::string process_tag(pid_t daemon, std::uint32_t serial) {
    return std::to_string(daemon) + "." + std::to_string(serial);
}

std::vector<const ProcessEntry*> find_server_processes(const ProcessTable& table,
                                                       const ServerMark& mark, pid_t within,
                                                       const TagCheck& has_tag) {
    // Whether each process belongs to the server; filled for the seeds, then by ancestry.
    std::unordered_map<pid_t, bool> belongs;
    const auto eligible = [&](const ProcessEntry& entry) {
        if (within <= 0) return true;
        return entry.pid != within && table.descends_from(entry.pid, within);
    };
    for (const ProcessEntry& entry : table.entries()) {
        if (!eligible(entry)) continue;
        const bool seed = entry.pid == mark.leader || entry.pgid == mark.leader ||
                          entry.sid == mark.leader ||
                          (!mark.tag.empty() && entry.state != 'Z' && has_tag && has_tag(entry.pid));
        if (seed) belongs[entry.pid] = true;
    }
    // Below a process of the server is the server's too.
    const auto below_seed = [&](pid_t pid) {
        std::vector<pid_t> path;
        bool found = false;
        for (std::size_t steps = 0; steps <= table.entries().size(); ++steps) {
            const auto known = belongs.find(pid);
            if (known != belongs.end()) {
                found = known->second;
                break;
            }
            path.push_back(pid);
            const ProcessEntry* entry = table.find(pid);
            if (entry == nullptr || entry->ppid <= 0 || entry->ppid == pid) break;
            pid = entry->ppid;
        }
        for (const pid_t on_path : path) belongs[on_path] = found;
        return found;
    };
    std::vector<const ProcessEntry*> out;
    for (const ProcessEntry& entry : table.entries()) {
        if (entry.state == 'Z' || !eligible(entry)) continue;
        if (below_seed(entry.pid)) out.push_back(&entry);
    }
    return out;
}

TagCheck environment_tag_check(const ServerMark& mark) {
    std::string entry(kProcessTagVariable);
    entry += '=';
    entry += mark.tag;
    return [entry = std::move(entry)](pid_t pid) { return process_environment_has(pid, entry); };
}

SweepResult signal_escaped_processes(const ServerMark& mark, int signo, pid_t within) {
    SweepResult result;
    const ProcessTable table = ProcessTable::read();
    for (const ProcessEntry* entry :
         find_server_processes(table, mark, within, environment_tag_check(mark))) {
        if (entry->pgid == mark.leader) continue;
        if (signal_exactly(*entry, signo)) {
            ++result.signalled;
            ++result.outside_group;
        }
    }
    return result;
}

SweepResult kill_server_processes(const ServerMark& mark, pid_t within) {
    if (mark.leader > 1) ::kill(-mark.leader, SIGKILL);
    const TagCheck has_tag = environment_tag_check(mark);
    std::set<pid_t> outside;
    const std::set<Identity> killed = kill_until_none([&](const ProcessTable& table) {
        auto found = find_server_processes(table, mark, within, has_tag);
        for (const ProcessEntry* entry : found) {
            if (entry->pgid != mark.leader) outside.insert(entry->pid);
        }
        return found;
    });
    SweepResult result;
    result.signalled = killed.size();
    for (const auto& [pid, start] : killed) result.outside_group += outside.contains(pid) ? 1 : 0;
    return result;
}

std::size_t kill_descendants(pid_t root, pid_t spare) {
    return kill_until_none([&](const ProcessTable& table) {
               std::vector<const ProcessEntry*> found;
               for (const ProcessEntry& entry : table.entries()) {
                   if (entry.state == 'Z' || entry.pid == root) continue;
                   if (spare > 0 && table.descends_from(entry.pid, spare)) continue;
                   if (table.descends_from(entry.pid, root)) found.push_back(&entry);
               }
               return found;
           })
        .size();
}

}  // namespace mcpd
