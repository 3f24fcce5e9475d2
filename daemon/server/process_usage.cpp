#include "daemon/server/process_usage.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <string>

#include "config/text_file.h"

namespace mcpd {
namespace {

// How long ago the system booted, in clock ticks (what /proc/PID/stat's start times count).
std::optional<unsigned long long> uptime_ticks(long hz) {
    std::ifstream in("/proc/uptime");
    double seconds = 0;
    if (!(in >> seconds)) return std::nullopt;
    return static_cast<unsigned long long>(seconds * static_cast<double>(hz));
}

std::optional<std::string> read_proc(pid_t pid, const char* file) {
    std::string text;
    if (config::read_text_file("/proc/" + std::to_string(pid) + "/" + file, text) != 0)
        return std::nullopt;
    return text;
}

std::optional<std::uint64_t> read_pss(pid_t pid) {
    const std::optional<std::string> text = read_proc(pid, "smaps_rollup");
    return text ? parse_pss(*text) : std::nullopt;
}

std::optional<std::uint64_t> read_peak(pid_t pid) {
    const std::optional<std::string> text = read_proc(pid, "status");
    return text ? parse_peak(*text) : std::nullopt;
}

// "NAME:    1234 kB" in `text`, in bytes.
std::optional<std::uint64_t> kib_line(std::string_view text, std::string_view name) {
    for (std::size_t at = 0; at < text.size();) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(at, end - at);
        at = end + 1;
        if (!line.starts_with(name)) continue;
        line.remove_prefix(name.size());
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
        std::uint64_t kib = 0;
        const auto [next, error] = std::from_chars(line.data(), line.data() + line.size(), kib);
        if (error != std::errc{} ||
            !std::string_view(next, line.data() + line.size()).starts_with(" kB"))
            return std::nullopt;
        return kib * 1024;
    }
    return std::nullopt;
}

// Samples older than this are forgotten (their server is gone, or nobody asks any more).
constexpr auto kForgetAfter = std::chrono::minutes(10);

}  // namespace

ProcessUsage& ProcessUsage::operator+=(const ProcessUsage& more) {
    processes += more.processes;
    cpu_ms += more.cpu_ms;
    rss_bytes += more.rss_bytes;
    cpu_percent += more.cpu_percent;
    if (pss_bytes && more.pss_bytes) {
        *pss_bytes += *more.pss_bytes;
    } else {
        pss_bytes.reset();
    }
    if (peak_bytes && more.peak_bytes) {
        *peak_bytes += *more.peak_bytes;
    } else {
        peak_bytes.reset();
    }
    return *this;
}

std::optional<std::uint64_t> parse_pss(std::string_view text) {
    return kib_line(text, "Pss:");
}

std::optional<std::uint64_t> parse_peak(std::string_view status) {
    return kib_line(status, "VmHWM:");
}

std::optional<ProcessUsage> UsageSampler::sample(const ProcessTable& table, const ServerMark& mark,
                                                 pid_t within, TimePoint now) {
    std::erase_if(previous_, [now](const auto& p) { return now - p.second.at > kForgetAfter; });
    const std::vector<const ProcessEntry*> found =
        find_server_processes(table, mark, within, environment_tag_check(mark));
    if (found.empty()) return std::nullopt;
    static const long hz = ::sysconf(_SC_CLK_TCK);
    static const long page = ::sysconf(_SC_PAGESIZE);
    ProcessUsage usage;
    usage.pss_bytes = 0;
    usage.peak_bytes = 0;
    unsigned long long oldest = 0;
    unsigned long long leader_start = 0;
    std::uint64_t ticks = 0;
    for (const ProcessEntry* entry : found) {
        usage.processes += 1;
        ticks += entry->user_ticks + entry->system_ticks;
        usage.rss_bytes += entry->rss_pages * static_cast<std::uint64_t>(page);
        if (oldest == 0 || entry->start_time < oldest) oldest = entry->start_time;
        if (entry->pid == mark.leader) leader_start = entry->start_time;
        const std::optional<std::uint64_t> peak = read_peak(entry->pid);
        if (peak && usage.peak_bytes) {
            *usage.peak_bytes += *peak;
        } else {
            usage.peak_bytes.reset();
        }
        const std::optional<std::uint64_t> pss = read_pss(entry->pid);
        if (pss && usage.pss_bytes) {
            *usage.pss_bytes += *pss;
        } else {
            usage.pss_bytes.reset();
        }
    }
    usage.cpu_ms = ticks * 1000 / static_cast<std::uint64_t>(hz);

    const auto it = previous_.find(mark.leader);
    if (it != previous_.end() && it->second.leader_start == leader_start &&
        usage.cpu_ms >= it->second.cpu_ms && now > it->second.at) {
        const double elapsed_ms =
            std::chrono::duration<double, std::milli>(now - it->second.at).count();
        usage.cpu_percent = static_cast<double>(usage.cpu_ms - it->second.cpu_ms) / elapsed_ms * 100;
    } else if (const auto up = uptime_ticks(hz); up && *up > oldest) {
        // The first sample: the average since the oldest process started, as ps(1) shows.
        usage.cpu_percent = static_cast<double>(ticks) / static_cast<double>(*up - oldest) * 100;
    }
    previous_[mark.leader] = Previous{leader_start, usage.cpu_ms, now};
    return usage;
}

}  // namespace mcpd
