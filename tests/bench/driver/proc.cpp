#include "proc.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace bench {
namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The number after "Key:" in a "Key:   123 kB" file such as status or smaps_rollup.
std::uint64_t field_kib(const std::string& text, const std::string& key) {
    const auto at = text.find("\n" + key + ":");
    const std::size_t start =
        at == std::string::npos
            ? (text.rfind(key + ":", 0) == 0 ? key.size() + 1 : std::string::npos)
            : at + key.size() + 2;
    if (start == std::string::npos) return 0;
    return std::strtoull(text.c_str() + start, nullptr, 10);
}

std::string proc_path(pid_t pid, const char* file) {
    return "/proc/" + std::to_string(pid) + "/" + file;
}

}  // namespace

bool cpu_has_ns_resolution() {
    static const bool has = !read_file("/proc/self/schedstat").empty();
    return has;
}

std::uint64_t cpu_ns(pid_t pid) {
    if (cpu_has_ns_resolution()) {
        // Every thread's time is in the process's schedstat (single-threaded here anyway).
        return std::strtoull(read_file(proc_path(pid, "schedstat")).c_str(), nullptr, 10);
    }
    const std::string stat = read_file(proc_path(pid, "stat"));
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream fields(stat.substr(paren + 2));
    std::string skip;
    for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt
    std::uint64_t utime = 0, stime = 0;
    fields >> utime >> stime;
    static const long ticks = ::sysconf(_SC_CLK_TCK);
    return (utime + stime) * 1'000'000'000ULL / static_cast<std::uint64_t>(ticks);
}

std::uint64_t minor_faults(pid_t pid) {
    const std::string stat = read_file(proc_path(pid, "stat"));
    const auto paren = stat.rfind(')');
    if (paren == std::string::npos) return 0;
    std::istringstream fields(stat.substr(paren + 2));
    std::string skip;
    for (int i = 3; i < 10; ++i) fields >> skip;  // state .. flags
    std::uint64_t minflt = 0;
    fields >> minflt;
    return minflt;
}

Memory status_memory(pid_t pid) {
    const std::string status = read_file(proc_path(pid, "status"));
    Memory m;
    m.rss_kib = field_kib(status, "VmRSS");
    m.hwm_kib = field_kib(status, "VmHWM");
    return m;
}

Memory full_memory(pid_t pid) {
    Memory m = status_memory(pid);
    const std::string rollup = read_file(proc_path(pid, "smaps_rollup"));
    m.pss_kib = field_kib(rollup, "Pss");
    m.private_kib = field_kib(rollup, "Private_Clean") + field_kib(rollup, "Private_Dirty");
    return m;
}

bool reset_peak_rss(pid_t pid) {
    std::FILE* f = std::fopen(proc_path(pid, "clear_refs").c_str(), "w");
    if (f == nullptr) return false;
    const bool ok = std::fputs("5", f) >= 0;
    return std::fclose(f) == 0 && ok;
}

double load_average() {
    double one = 0;
    std::FILE* f = std::fopen("/proc/loadavg", "r");
    if (f == nullptr) return 0;
    if (std::fscanf(f, "%lf", &one) != 1) one = 0;
    std::fclose(f);
    return one;
}

Machine machine() {
    Machine m;
    std::istringstream cpuinfo(read_file("/proc/cpuinfo"));
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0 && m.cpu_model.empty()) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) m.cpu_model = line.substr(colon + 2);
        }
        if (line.rfind("processor", 0) == 0) ++m.cores;
    }
    utsname u{};
    if (::uname(&u) == 0) m.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
    std::FILE* f = std::fopen("/proc/loadavg", "r");
    if (f != nullptr) {
        if (std::fscanf(f, "%lf %lf %lf", &m.load1, &m.load5, &m.load15) != 3) m.load1 = 0;
        std::fclose(f);
    }
    return m;
}

}  // namespace bench
