// cgroup v2 leaves under the cgroup systemd delegated to mcpd (Delegate=yes): one per server
// process, holding its limits and counting its whole tree. The directory is passed in, so
// the tests run these on a tree of plain files.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "config/sandbox.h"

namespace mcpd::sandbox {

struct CgroupLimits {
    std::optional<std::uint64_t> memory;  // memory.max
    std::optional<std::uint64_t> tasks;   // pids.max
    std::optional<config::CpuLimit> cpu;  // cpu.max (quota) or cpu.weight
    bool any() const { return memory || tasks || cpu; }
};

// What a leaf counted for its processes, living and gone.
struct CgroupUsage {
    std::optional<std::uint64_t> cpu_us;        // cpu.stat usage_usec
    std::optional<std::uint64_t> memory_bytes;  // memory.current
    std::optional<std::uint64_t> peak_bytes;    // memory.peak (Linux 5.19)
    std::optional<std::uint64_t> oom_kills;     // memory.events oom_kill
    std::optional<std::uint64_t> tasks;         // pids.current
};

class CgroupTree {
public:
    // `delegated`: mcpd's own cgroup directory (KernelSupport::cgroup).
    explicit CgroupTree(std::string delegated) : root_(std::move(delegated)) {}

    // Once, before the first leaf: mcpd moves itself into the leaf "mcpd" (a cgroup with
    // controllers enabled for its children may hold no process) and enables memory, pids and
    // cpu below. `self` is the pid to move (getpid()).
    Result<Done> prepare(pid_t self);

    // A new leaf for one process of server `name` with `limits` written; its directory. A
    // serial whose leaf holds processes already (one carried across an upgrade in place, which
    // restarts the count) is passed over for the next one that is free or empty.
    Result<std::string> make_leaf(const std::string& name, unsigned serial,
                                  const CgroupLimits& limits) const;

    const std::string& root() const { return root_; }

private:
    std::string root_;
    bool prepared_ = false;
};

// The leaf's figures; a file that cannot be read leaves its figure unset.
CgroupUsage read_usage(const std::string& leaf);

// Remove a leaf whose processes are all gone (rmdir); false while any remain.
bool remove_leaf(const std::string& leaf);

// "50000 100000" for a 50 % quota; the text cpu.max takes.
std::string cpu_max_text(const config::CpuLimit& quota);

}  // namespace mcpd::sandbox
