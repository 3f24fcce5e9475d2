#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "daemon/server/process_table.h"
#include "daemon/server/server_processes.h"

using namespace mcpd;

namespace {

ProcessEntry process(pid_t pid, pid_t ppid, pid_t pgid, pid_t sid, char state = 'S') {
    ProcessEntry entry;
    entry.pid = pid;
    entry.ppid = ppid;
    entry.pgid = pgid;
    entry.sid = sid;
    entry.state = state;
    entry.start_time = static_cast<unsigned long long>(pid) * 10;
    return entry;
}

std::set<pid_t> pids(const std::vector<const ProcessEntry*>& found) {
    std::set<pid_t> out;
    for (const ProcessEntry* entry : found) out.insert(entry->pid);
    return out;
}

// mcpd (100) with its keeper (101) and two servers, 200 and 300, each leading its own
// session and group; init is 1 and an unrelated session lives at 900.
ProcessTable machine(std::vector<ProcessEntry> extra) {
    std::vector<ProcessEntry> entries = {
        process(1, 0, 1, 1),           process(100, 1, 100, 100),  process(101, 100, 100, 100),
        process(200, 100, 200, 200),   process(201, 200, 200, 200),  // 200's group member
        process(300, 100, 300, 300),   process(301, 300, 300, 300),
        process(900, 1, 900, 900),     process(901, 900, 900, 900),
    };
    entries.insert(entries.end(), extra.begin(), extra.end());
    return ProcessTable(std::move(entries));
}

const TagCheck kNoTags = [](pid_t) { return false; };

}  // namespace

TEST_CASE("a stat line is read after the command name, whatever it holds", "[processes]") {
    const auto entry = parse_process_stat(
        "4242 (we) (ird) name) S 17 4242 4240 34816 4242 4194304 1 2 3 4 5 6 7 8 20 0 1 0 "
        "987654 1000 200 18446744073709551615");
    REQUIRE(entry);
    CHECK(entry->pid == 4242);
    CHECK(entry->state == 'S');
    CHECK(entry->ppid == 17);
    CHECK(entry->pgid == 4242);
    CHECK(entry->sid == 4240);
    CHECK(entry->start_time == 987654);
    CHECK(entry->user_ticks == 5);  // utime and stime, for mcpctl stats
    CHECK(entry->system_ticks == 6);
    CHECK(entry->rss_pages == 200);

    CHECK_FALSE(parse_process_stat(""));
    CHECK_FALSE(parse_process_stat("12 (cut"));
    CHECK_FALSE(parse_process_stat("12 (short) S 1 2"));
}

TEST_CASE("this process reads itself from /proc", "[processes]") {
    const auto self = read_process_entry(::getpid());
    REQUIRE(self);
    CHECK(self->pid == ::getpid());
    CHECK(self->ppid == ::getppid());
    CHECK(self->pgid == ::getpgrp());
    CHECK(self->sid == ::getsid(0));
    const ProcessTable table = ProcessTable::read();
    REQUIRE(table.find(::getpid()) != nullptr);
    CHECK(table.descends_from(::getpid(), ::getppid()));
    CHECK(table.descends_from(::getpid(), 1));
}

TEST_CASE("a server's processes: its group, its session, its tag and what is below them",
          "[processes]") {
    const ProcessTable table = machine({
        process(210, 200, 210, 200),  // setpgid(0, 0): own group, the server's session
        process(211, 210, 210, 200),  // its child
        process(220, 200, 220, 220),  // setsid(): below the server still
        process(221, 220, 220, 220),
        process(230, 100, 230, 230),  // setsid() and its parent exited: back to mcpd, tagged
        process(231, 230, 231, 231),  // its child, which left again: below a tagged one
        process(240, 100, 240, 240),  // like 230, but with server 300's tag
        process(250, 100, 250, 250),  // orphaned, untagged: nobody's that can be told
        process(260, 100, 200, 200, 'Z'),  // a zombie in the group: nothing to signal
    });
    const TagCheck tags = [](pid_t pid) { return pid == 230; };
    const ServerMark server{200, "100.1"};
    CHECK(pids(find_server_processes(table, server, 100, tags)) ==
          std::set<pid_t>{200, 201, 210, 211, 220, 221, 230, 231});

    // Server 300 by group and tag; nothing of 200's.
    const TagCheck tags_300 = [](pid_t pid) { return pid == 240; };
    CHECK(pids(find_server_processes(table, {300, "100.2"}, 100, tags_300)) ==
          std::set<pid_t>{300, 301, 240});
}

TEST_CASE("while mcpd runs, only its descendants are considered", "[processes]") {
    // 950 carries the tag and sits in the server's session id, but is not below mcpd: a
    // stranger (or a forged tag), never touched while mcpd can see its own tree.
    const ProcessTable table = machine({process(950, 1, 950, 200)});
    const TagCheck tags = [](pid_t pid) { return pid == 950; };
    CHECK(pids(find_server_processes(table, {200, "100.1"}, 100, tags)) ==
          std::set<pid_t>{200, 201});
    // The keeper, after mcpd is gone, goes by session and tag alone.
    CHECK(pids(find_server_processes(table, {200, "100.1"}, 0, tags)) ==
          std::set<pid_t>{200, 201, 950});
}

TEST_CASE("an untagged check never reads environments", "[processes]") {
    const ProcessTable table = machine({process(230, 100, 230, 230)});
    bool asked = false;
    const TagCheck spy = [&](pid_t) {
        asked = true;
        return true;
    };
    CHECK(pids(find_server_processes(table, {200, ""}, 100, spy)) == std::set<pid_t>{200, 201});
    CHECK_FALSE(asked);
    CHECK(pids(find_server_processes(table, {200, ""}, 100, kNoTags)) ==
          std::set<pid_t>{200, 201});
}

TEST_CASE("the process tag names mcpd and the serial", "[processes]") {
    CHECK(process_tag(1234, 7) == "1234.7");
}
