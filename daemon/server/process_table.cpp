#include "daemon/server/process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <memory>
#include <string>

#include "common/unique_fd.h"

namespace mcpd {
namespace {

// The whole of a small /proc file, or nullopt.
std::optional<std::string> read_proc_file(const std::string& path, std::size_t limit) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return std::nullopt;
    std::string text;
    std::array<char, 4096> buffer{};
    while (text.size() < limit) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return std::nullopt;
        }
        if (n == 0) break;
        text.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return text;
}

template <typename T>
bool next_number(std::string_view& rest, T& out) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), out);
    if (error != std::errc{}) return false;
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    return true;
}

bool skip_field(std::string_view& rest) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    const std::size_t space = rest.find(' ');
    if (space == std::string_view::npos) return false;
    rest.remove_prefix(space);
    return true;
}

}  // namespace

std::optional<ProcessEntry> parse_process_stat(std::string_view text) {
    // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
    //  utime stime cutime cstime priority nice num_threads itrealvalue starttime ..."
    ProcessEntry entry;
    std::string_view head = text;
    if (!next_number(head, entry.pid)) return std::nullopt;
    const std::size_t close = text.rfind(')');
    if (close == std::string_view::npos || close + 2 >= text.size()) return std::nullopt;
    std::string_view rest = text.substr(close + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) return std::nullopt;
    entry.state = rest.front();
    rest.remove_prefix(1);
    if (!next_number(rest, entry.ppid) || !next_number(rest, entry.pgid) ||
        !next_number(rest, entry.sid)) {
        return std::nullopt;
    }
    for (int field = 7; field < 14; ++field) {  // tty_nr .. cmajflt
        if (!skip_field(rest)) return std::nullopt;
    }
    if (!next_number(rest, entry.user_ticks) || !next_number(rest, entry.system_ticks))
        return std::nullopt;
    for (int field = 16; field < 22; ++field) {  // cutime .. itrealvalue
        if (!skip_field(rest)) return std::nullopt;
    }
    if (!next_number(rest, entry.start_time)) return std::nullopt;
    // vsize, then rss (pages); a shorter line (older tests' fixtures) has none.
    if (skip_field(rest) && !next_number(rest, entry.rss_pages)) entry.rss_pages = 0;
    return entry;
}

std::optional<ProcessEntry> read_process_entry(pid_t pid) {
    const auto text = read_proc_file("/proc/" + std::to_string(pid) + "/stat", 4096);
    if (!text) return std::nullopt;
    return parse_process_stat(*text);
}

bool process_environment_has(pid_t pid, std::string_view entry) {
    // Environments are rarely past a few KiB; one larger than this is not searched to its end.
    constexpr std::size_t kLimit = 1024 * 1024;
    const auto text = read_proc_file("/proc/" + std::to_string(pid) + "/environ", kLimit);
    if (!text) return false;
    std::string_view rest(*text);
    while (!rest.empty()) {
        const std::size_t end = rest.find('\0');
        const std::string_view variable = rest.substr(0, end);
        if (variable == entry) return true;
        if (end == std::string_view::npos) break;
        rest.remove_prefix(end + 1);
    }
    return false;
}

ProcessTable ProcessTable::read() {
    std::vector<ProcessEntry> entries;
    const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc"), ::closedir);
    if (dir) {
        while (const dirent* item = ::readdir(dir.get())) {
            pid_t pid = 0;
            const std::string_view name(item->d_name);
            const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
            if (error != std::errc{} || end != name.data() + name.size() || pid <= 0) continue;
            if (auto entry = read_process_entry(pid)) entries.push_back(*entry);
        }
    }
    return ProcessTable(std::move(entries));
}

ProcessTable::ProcessTable(std::vector<ProcessEntry> entries) : entries_(std::move(entries)) {
    for (std::size_t i = 0; i < entries_.size(); ++i) index_[entries_[i].pid] = i;
}

const ProcessEntry* ProcessTable::find(pid_t pid) const {
    const auto it = index_.find(pid);
    return it == index_.end() ? nullptr : &entries_[it->second];
}

bool ProcessTable::descends_from(pid_t pid, pid_t ancestor) const {
    // Bounded by the table's size: a parent loop (impossible, but /proc is read piecemeal)
    // cannot make this spin.
    for (std::size_t steps = 0; steps <= entries_.size(); ++steps) {
        if (pid == ancestor) return true;
        const ProcessEntry* entry = find(pid);
        if (entry == nullptr || entry->ppid == pid || entry->ppid <= 0) return false;
        pid = entry->ppid;
    }
    return false;
}

}  // namespace mcpd
