// cgroup leaves (daemon/sandbox/cgroup_leaf.h) on a tree of plain files shaped like cgroupfs:
// mcpd moves itself out of the delegated root and enables the controllers, each leaf gets its
// limits, and its figures are read back.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "daemon/sandbox/cgroup_leaf.h"
#include "daemon/server/process_usage.h"
#include "daemon/server/server_cgroup.h"

using namespace mcpd;

namespace {

struct FakeCgroup {
    std::string root;
    FakeCgroup() {
        std::string pattern = "/tmp/mcpd-cgroup-XXXXXX";
        REQUIRE(::mkdtemp(pattern.data()) != nullptr);
        root = pattern;
        put("cgroup.subtree_control", "");
        // cgroupfs creates a new directory's files itself; here they are made ahead.
        ::mkdir((root + "/mcpd").c_str(), 0755);
        put("mcpd/cgroup.procs", "");
    }
    ~FakeCgroup() { std::filesystem::remove_all(root); }
    void put(const std::string& file, const std::string& text) const {
        std::ofstream(root + "/" + file) << text;
    }
    std::string get(const std::string& file) const {
        std::ifstream in(root + "/" + file);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    void leaf_files(const std::string& leaf) const {
        ::mkdir((root + "/" + leaf).c_str(), 0755);
        for (const char* file : {"memory.max", "pids.max", "cpu.max", "cpu.weight", "cgroup.procs"})
            put(leaf + "/" + file, "");
    }
};

}  // namespace

TEST_CASE("cgroup: mcpd leaves the delegated root and enables memory, pids and cpu below",
          "[sandbox][cgroup]") {
    const FakeCgroup cg;
    sandbox::CgroupTree tree(cg.root);
    REQUIRE(tree.prepare(4242));
    CHECK(cg.get("mcpd/cgroup.procs") == "4242");
    CHECK(cg.get("cgroup.subtree_control") == "+memory +pids +cpu");
    // A root that is not there is an error that names it.
    sandbox::CgroupTree missing(cg.root + "/nowhere");
    const Result<Done> refused = missing.prepare(1);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().find(cg.root + "/nowhere/mcpd") != std::string::npos);
}

TEST_CASE("cgroup: a leaf per process with its limits", "[sandbox][cgroup]") {
    const FakeCgroup cg;
    cg.leaf_files("server-fs-7");
    const sandbox::CgroupTree tree(cg.root);
    sandbox::CgroupLimits limits;
    limits.memory = 512ULL << 20;
    limits.tasks = 64;
    limits.cpu = config::CpuLimit{config::CpuLimit::Kind::quota, 150};
    const Result<std::string> leaf = tree.make_leaf("fs", 7, limits);
    REQUIRE(leaf);
    CHECK(leaf.value() == cg.root + "/server-fs-7");
    CHECK(cg.get("server-fs-7/memory.max") == "536870912");
    CHECK(cg.get("server-fs-7/pids.max") == "64");
    CHECK(cg.get("server-fs-7/cpu.max") == "150000 100000");

    cg.leaf_files("server-fs-8");
    limits = {};
    limits.cpu = config::CpuLimit{config::CpuLimit::Kind::weight, 50};
    REQUIRE(tree.make_leaf("fs", 8, limits));
    CHECK(cg.get("server-fs-8/cpu.weight") == "50");
    CHECK(cg.get("server-fs-8/memory.max").empty());
    CHECK(sandbox::cpu_max_text({config::CpuLimit::Kind::quota, 50}) == "50000 100000");

    // A leaf holding a process (one carried across an upgrade, whose count starts again) is
    // passed over; an empty one left by a process that ended is used again.
    cg.put("server-fs-8/cgroup.procs", "4242\n");
    cg.leaf_files("server-fs-9");
    const Result<std::string> next = tree.make_leaf("fs", 8, limits);
    REQUIRE(next);
    CHECK(next.value() == cg.root + "/server-fs-9");
    cg.put("server-fs-8/cgroup.procs", "");
    CHECK(tree.make_leaf("fs", 8, limits).value() == cg.root + "/server-fs-8");
}

TEST_CASE("cgroup: a leaf's figures, and OOM kills over a server's processes",
          "[sandbox][cgroup]") {
    const FakeCgroup cg;
    cg.leaf_files("server-demo-1");
    cg.put("server-demo-1/cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n");
    cg.put("server-demo-1/memory.current", "10485760\n");
    cg.put("server-demo-1/memory.peak", "20971520\n");
    cg.put("server-demo-1/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
    cg.put("server-demo-1/pids.current", "4\n");
    const sandbox::CgroupUsage usage = sandbox::read_usage(cg.root + "/server-demo-1");
    CHECK(usage.cpu_us == 1500000U);
    CHECK(usage.memory_bytes == 10485760U);
    CHECK(usage.peak_bytes == 20971520U);
    CHECK(usage.oom_kills == 1U);
    CHECK(usage.tasks == 4U);
    // An older kernel without memory.peak: that figure is unknown, the rest stands.
    const sandbox::CgroupUsage none = sandbox::read_usage(cg.root + "/nowhere");
    CHECK_FALSE(none.peak_bytes);
    CHECK_FALSE(none.oom_kills);

    ServerCgroup server;
    CHECK_FALSE(server.oom_kills());
    CHECK_FALSE(server.active());
    server.started(cg.root + "/server-demo-1");
    CHECK(server.active());
    CHECK(server.oom_kills() == 1U);
    CHECK(server.usage()->peak_bytes == 20971520U);
    CHECK(server.ended());  // the OOM killer ended it
    CHECK_FALSE(server.usage());
    CHECK(server.oom_kills() == 1U);
    cg.leaf_files("server-demo-2");
    server.started(cg.root + "/server-demo-2");
    CHECK_FALSE(server.ended());  // an exit of its own
    CHECK(server.oom_kills() == 1U);
}

TEST_CASE("process usage: the peak and proportional sizes /proc gives", "[sandbox][stats]") {
    CHECK(parse_peak("Name:\tnode\nVmPeak:\t  900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t 40000 kB\n") ==
          51200ULL * 1024);
    CHECK_FALSE(parse_peak("Name:\tnode\nVmRSS:\t 40000 kB\n"));
    CHECK_FALSE(parse_peak("VmHWM:\t lots\n"));
    CHECK(parse_pss("Rss:  100 kB\nPss:                 1234 kB\n") == 1234ULL * 1024);
}
