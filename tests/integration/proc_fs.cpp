#include "proc_fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace integration {

namespace {

struct StatFields {
    char state = '?';
    pid_t ppid = 0;
};

// read(2), not a stream: reading a /proc file of a process that exits meanwhile fails with
// ESRCH, which a file stream throws as an exception. What was read is kept.
std::string read_proc_file(const std::string& path) {
    std::string text;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return text;
    char chunk[16384];
    for (;;) {
        const ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n > 0) {
            text.append(chunk, static_cast<std::size_t>(n));
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            break;
        }
    }
    ::close(fd);
    return text;
}

// /proc/PID/stat is "pid (comm) S ppid ...": comm may hold spaces and parentheses, so the
// fields are read after the last ')'.
std::optional<StatFields> read_stat(pid_t pid) {
    const std::string text = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) return std::nullopt;
    std::istringstream rest(text.substr(paren + 1));
    StatFields fields;
    if (!(rest >> fields.state >> fields.ppid)) return std::nullopt;
    return fields;
}

// Every numeric entry of /proc.
std::vector<pid_t> all_pids() {
    std::vector<pid_t> pids;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        pid_t pid = 0;
        const auto [end, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
        if (err == std::errc() && end == name.data() + name.size()) pids.push_back(pid);
    }
    return pids;
}

}  // namespace

std::optional<char> process_state(pid_t pid) {
    const auto fields = read_stat(pid);
    if (!fields) return std::nullopt;
    return fields->state;
}

bool process_alive(pid_t pid) {
    const auto state = process_state(pid);
    return state && *state != 'Z' && *state != 'X';
}

std::string process_name(pid_t pid) {
    std::string name = read_proc_file("/proc/" + std::to_string(pid) + "/comm");
    while (!name.empty() && name.back() == '\n') name.pop_back();
    return name;
}

std::string process_cmdline(pid_t pid) {
    return read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
}

std::vector<pid_t> all_processes() { return all_pids(); }

std::vector<pid_t> named(const std::vector<pid_t>& pids, const std::string& name) {
    std::vector<pid_t> out;
    std::copy_if(pids.begin(), pids.end(), std::back_inserter(out),
                 [&](pid_t pid) { return process_name(pid) == name; });
    return out;
}

std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> children;
    for (pid_t pid : all_pids()) {
        const auto fields = read_stat(pid);
        if (fields && fields->ppid == parent) children.push_back(pid);
    }
    return children;
}

std::vector<pid_t> zombie_children_of(pid_t parent) {
    std::vector<pid_t> zombies;
    for (pid_t pid : children_of(parent)) {
        if (process_state(pid) == 'Z') zombies.push_back(pid);
    }
    return zombies;
}

std::vector<pid_t> processes_with_marker(const std::string& marker) {
    const std::string wanted = std::string(kMarkerVariable) + "=" + marker;
    std::vector<pid_t> found;
    for (pid_t pid : all_pids()) {
        const std::string env_block = read_proc_file("/proc/" + std::to_string(pid) + "/environ");
        std::size_t begin = 0;
        while (begin < env_block.size()) {
            std::size_t end = env_block.find('\0', begin);
            if (end == std::string::npos) end = env_block.size();
            if (env_block.compare(begin, end - begin, wanted) == 0) {
                if (process_alive(pid)) found.push_back(pid);
                break;
            }
            begin = end + 1;
        }
    }
    return found;
}

std::optional<std::size_t> resident_bytes(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);) {
        if (!line.starts_with("VmRSS:")) continue;
        std::istringstream fields(line.substr(6));
        std::size_t kib = 0;
        if (fields >> kib) return kib * 1024;
    }
    return std::nullopt;
}

std::optional<uid_t> process_real_uid(pid_t pid) {
    const std::string status = read_proc_file("/proc/" + std::to_string(pid) + "/status");
    const std::size_t at = status.find("\nUid:");
    if (at == std::string::npos) return std::nullopt;
    return static_cast<uid_t>(std::stoul(status.substr(at + 5)));
}

std::optional<std::size_t> open_fd_count(pid_t pid) {
    std::error_code ec;
    std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec);
    if (ec) return std::nullopt;
    std::size_t count = 0;
    for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
        if (ec) return std::nullopt;
        ++count;
    }
    return count;
}

std::optional<long long> cpu_time_ms(pid_t pid) {
    const std::string text = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
    const auto paren = text.rfind(')');
    if (paren == std::string::npos) return std::nullopt;
    // After the command: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt,
    // majflt, cmajflt, then utime and stime in clock ticks.
    std::istringstream rest(text.substr(paren + 1));
    std::string field;
    for (int i = 0; i < 11; ++i) rest >> field;
    long long utime = 0, stime = 0;
    if (!(rest >> utime >> stime)) return std::nullopt;
    return (utime + stime) * 1000 / ::sysconf(_SC_CLK_TCK);
}

std::string describe_processes(const std::vector<pid_t>& pids) {
    std::string text;
    for (pid_t pid : pids) {
        const auto fields = read_stat(pid);
        if (!text.empty()) text += ", ";
        text += std::to_string(pid) + " (" + process_name(pid) + ", " +
                (fields ? std::string(1, fields->state) + ", parent " + std::to_string(fields->ppid)
                        : std::string("gone")) +
                ")";
    }
    return text.empty() ? "none" : text;
}

}  // namespace integration
