// A server entry's cgroup leaves (daemon/sandbox/cgroup_leaf.h): the one its running process
// is in, the ones of processes that ended (removed once empty), and the OOM kills they saw.
// Without a delegated cgroup it holds nothing and says nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/sandbox/cgroup_leaf.h"

namespace mcpd {

class ServerCgroup {
public:
    ServerCgroup() = default;
    ServerCgroup(const ServerCgroup&) = delete;
    ServerCgroup& operator=(const ServerCgroup&) = delete;
    ~ServerCgroup();

    // The leaf of the process just started (empty: none).
    void started(std::string leaf);
    // Its process ended: true when the kernel's OOM killer ended a process of it.
    bool ended();
    // Remove the leaves of ended processes that are empty now.
    void tidy();

    bool active() const { return !leaf_.empty() || counted_; }
    // The running process's leaf's figures; none without a leaf.
    std::optional<sandbox::CgroupUsage> usage() const;
    // OOM kills over every process it had, the running one's included; none without a cgroup.
    std::optional<std::uint64_t> oom_kills() const;

    // An upgrade in place: its leaves and counts as they are, and, in the new process, the
    // same again. A leaf outside mcpd's delegated cgroup is refused (nothing is taken).
    struct Carried {
        std::string leaf;
        std::vector<std::string> ended;
        std::uint64_t oom_kills = 0;
        bool counted = false;
        bool operator==(const Carried&) const = default;
    };
    Carried carried() const { return {leaf_, ended_, oom_kills_, counted_}; }
    Result<Done> restore(const Carried& carried);

private:
    std::string leaf_;
    std::vector<std::string> ended_;
    std::uint64_t oom_kills_ = 0;  // of ended processes
    bool counted_ = false;         // a leaf was ever used
};

}  // namespace mcpd
