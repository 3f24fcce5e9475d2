#include "daemon/sandbox/cgroup_leaf.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "common/unique_fd.h"
#include "config/text_file.h"

namespace mcpd::sandbox {

namespace {

constexpr std::uint64_t kCpuPeriodUs = 100000;

Result<Done> write_text(const std::string& path, const std::string& text) {
    const UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) return system_failure("cannot open " + path, errno);
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        return system_failure("cannot write " + path, errno);
    return Done{};
}

std::optional<std::string> read_text(const std::string& path) {
    std::string text;
    if (config::read_text_file(path, text) != 0) return std::nullopt;
    return text;
}

std::optional<std::uint64_t> number(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// The value of `key` in a flat keyed file ("usage_usec 123\n...").
std::optional<std::uint64_t> keyed(const std::optional<std::string>& text, std::string_view key) {
    if (!text) return std::nullopt;
    std::string_view rest(*text);
    while (!rest.empty()) {
        const std::size_t end = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ')
            return number(line.substr(key.size() + 1));
    }
    return std::nullopt;
}

std::optional<std::uint64_t> plain(const std::string& path) {
    const std::optional<std::string> text = read_text(path);
    return text ? number(*text) : std::nullopt;
}

}  // namespace

std::string cpu_max_text(const config::CpuLimit& quota) {
    return std::to_string(static_cast<std::uint64_t>(quota.value) * kCpuPeriodUs / 100) + " " +
           std::to_string(kCpuPeriodUs);
}

Result<Done> CgroupTree::prepare(pid_t self) {
    if (prepared_) return Done{};
    const std::string own = root_ + "/mcpd";
    if (::mkdir(own.c_str(), 0755) != 0 && errno != EEXIST)
        return system_failure("cannot create " + own, errno);
    if (Result<Done> moved = write_text(own + "/cgroup.procs", std::to_string(self)); !moved)
        return moved;
    if (Result<Done> enabled = write_text(root_ + "/cgroup.subtree_control", "+memory +pids +cpu");
        !enabled)
        return enabled;
    prepared_ = true;
    return Done{};
}

Result<std::string> CgroupTree::make_leaf(const std::string& name, unsigned serial,
                                          const CgroupLimits& limits) const {
    std::string leaf;
    for (unsigned tries = 0;; ++tries, ++serial) {
        leaf = root_ + "/server-" + name + "-" + std::to_string(serial);
        if (::mkdir(leaf.c_str(), 0755) == 0) break;
        if (errno != EEXIST) return system_failure("cannot create " + leaf, errno);
        // Left empty by a process that ended: used again. Holding processes: another's.
        if (read_text(leaf + "/cgroup.procs").value_or("").find_first_not_of(" \n") == std::string::npos) break;
        if (tries >= 4096) return permanent_failure("every leaf of " + name + " up to " + leaf + " is in use");
    }
    const auto write = [&](const char* file, const std::string& text) -> Result<Done> {
        return write_text(leaf + "/" + file, text);
    };
    if (limits.memory) {
        if (Result<Done> done = write("memory.max", std::to_string(*limits.memory)); !done)
            return done.failure();
    }
    if (limits.tasks) {
        if (Result<Done> done = write("pids.max", std::to_string(*limits.tasks)); !done)
            return done.failure();
    }
    if (limits.cpu) {
        const bool quota = limits.cpu->kind == config::CpuLimit::Kind::quota;
        Result<Done> done = quota ? write("cpu.max", cpu_max_text(*limits.cpu))
                                  : write("cpu.weight", std::to_string(limits.cpu->value));
        if (!done) return done.failure();
    }
    return leaf;
}

CgroupUsage read_usage(const std::string& leaf) {
    CgroupUsage usage;
    usage.cpu_us = keyed(read_text(leaf + "/cpu.stat"), "usage_usec");
    usage.memory_bytes = plain(leaf + "/memory.current");
    usage.peak_bytes = plain(leaf + "/memory.peak");
    usage.oom_kills = keyed(read_text(leaf + "/memory.events"), "oom_kill");
    usage.tasks = plain(leaf + "/pids.current");
    return usage;
}

bool remove_leaf(const std::string& leaf) {
    return ::rmdir(leaf.c_str()) == 0 || errno == ENOENT;
}

}  // namespace mcpd::sandbox
