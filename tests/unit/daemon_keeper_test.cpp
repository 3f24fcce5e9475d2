#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/server/keeper.h"
#include "daemon/server/process_table.h"
#include "daemon/server/server_processes.h"

using namespace mcpd;

namespace {

std::string encode(KeeperOp op, pid_t pgid, std::uint32_t serial = 0) {
    const KeeperMessage message{static_cast<std::uint32_t>(op), static_cast<std::int32_t>(pgid),
                                serial};
    return std::string(reinterpret_cast<const char*>(&message), sizeof message);
}

std::string encode_raw(std::uint32_t op, std::int32_t pgid) {
    const KeeperMessage message{op, pgid, 0};
    return std::string(reinterpret_cast<const char*>(&message), sizeof message);
}

std::set<pid_t> groups_of(const std::map<pid_t, std::uint32_t>& listed) {
    std::set<pid_t> out;
    for (const auto& [group, serial] : listed) out.insert(group);
    return out;
}

// Whether `pid` is dead: gone from /proc, or a zombie nobody has reaped yet.
bool dead(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    return paren == std::string::npos || text.compare(paren + 1, 3, " Z ") == 0;
}

bool wait_dead(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!dead(pid)) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

// A process group of two: a leader (our child) and its child, both waiting for a signal.
// However the test ends, the group is killed and its leader reaped.
struct Group {
    pid_t leader = -1;
    pid_t member = -1;
    Group() = default;
    Group(const Group&) = delete;
    Group& operator=(const Group&) = delete;
    ~Group() {
        if (leader <= 0) return;
        ::kill(-leader, SIGKILL);
        int status = 0;
        ::waitpid(leader, &status, 0);  // ECHILD when the test reaped it already
    }
};

// Start a Group; the member's pid arrives through a pipe.
void make_group(Group& group) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t leader = ::fork();
    REQUIRE(leader >= 0);
    if (leader == 0) {
        ::setsid();
        const pid_t member = ::fork();
        if (member == 0) {
            for (;;) ::pause();
        }
        [[maybe_unused]] const ssize_t n = ::write(fds[1], &member, sizeof member);
        for (;;) ::pause();
    }
    group.leader = leader;
    ::close(fds[1]);
    pid_t member = -1;
    REQUIRE(::read(fds[0], &member, sizeof member) == static_cast<ssize_t>(sizeof member));
    ::close(fds[0]);
    group.member = member;
}

// waitpid with a deadline; the decoded status or nullopt.
std::optional<int> wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) return status;
        if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

}  // namespace

TEST_CASE("the keeper ledger adds and removes process groups", "[keeper]") {
    KeeperLedger ledger;
    ledger.feed(encode(KeeperOp::add, 100) + encode(KeeperOp::add, 200) +
                encode(KeeperOp::add, 100));
    CHECK(groups_of(ledger.groups()) == std::set<pid_t>{100, 200});
    ledger.feed(encode(KeeperOp::remove, 100) + encode(KeeperOp::remove, 300));
    CHECK(groups_of(ledger.groups()) == std::set<pid_t>{200});
}

TEST_CASE("the keeper ledger joins messages split across reads", "[keeper]") {
    KeeperLedger ledger;
    const std::string bytes =
        encode(KeeperOp::add, 4242) + encode(KeeperOp::add, 77) + encode(KeeperOp::remove, 4242);
    for (std::size_t cut = 0; cut + 3 <= bytes.size(); cut += 3) ledger.feed(bytes.substr(cut, 3));
    ledger.feed(bytes.substr(bytes.size() / 3 * 3));
    CHECK(groups_of(ledger.groups()) == std::set<pid_t>{77});
}

TEST_CASE("the keeper ledger ignores what it cannot mean", "[keeper]") {
    KeeperLedger ledger;
    // Group ids 0, 1 and negatives would make kill(-pgid) hit far more than one group.
    ledger.feed(encode(KeeperOp::add, 0) + encode(KeeperOp::add, 1) + encode(KeeperOp::add, -5) +
                encode_raw(7, 500) + encode(KeeperOp::add, 600));
    CHECK(groups_of(ledger.groups()) == std::set<pid_t>{600});
}

TEST_CASE("read_keeper_pipe returns the groups listed when the writer closes", "[keeper]") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const std::string bytes = encode(KeeperOp::add, 10) + encode(KeeperOp::add, 11) +
                              encode(KeeperOp::remove, 10) + encode(KeeperOp::add, 12, 9);
    REQUIRE(::write(fds[1], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
    ::close(fds[1]);
    CHECK(read_keeper_pipe(fds[0]) == std::map<pid_t, std::uint32_t>{{11, 0}, {12, 9}});
    ::close(fds[0]);
}

TEST_CASE("a keeper kills the groups still listed when its pipe closes, then exits", "[keeper]") {
    Group doomed, spared;
    make_group(doomed);
    make_group(spared);
    const pid_t doomed_leader = doomed.leader, doomed_member = doomed.member;
    const pid_t spared_leader = spared.leader, spared_member = spared.member;

    Result<KeeperProcess> forked = fork_keeper();
    REQUIRE(forked.ok());
    KeeperProcess& keeper = forked.value();
    REQUIRE(keeper.pid > 0);
    const std::string bytes = encode(KeeperOp::add, doomed_leader) +
                              encode(KeeperOp::add, spared_leader) +
                              encode(KeeperOp::remove, spared_leader);
    REQUIRE(::write(keeper.pipe.get(), bytes.data(), bytes.size()) ==
            static_cast<ssize_t>(bytes.size()));

    // Signals a keeper does not need cannot end it: mcpd's own SIGTERM or a terminal's
    // SIGINT reaching the whole process group must leave it to do its work.
    REQUIRE(::kill(keeper.pid, SIGTERM) == 0);
    REQUIRE(::kill(keeper.pid, SIGINT) == 0);
    REQUIRE(::kill(keeper.pid, SIGHUP) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(dead(keeper.pid));
    CHECK_FALSE(dead(doomed_member));

    keeper.pipe.reset();  // as if mcpd died
    const auto keeper_status = wait_exit(keeper.pid, std::chrono::seconds(10));
    REQUIRE(keeper_status);
    CHECK(WIFEXITED(*keeper_status));
    CHECK(WEXITSTATUS(*keeper_status) == 0);

    const auto leader_status = wait_exit(doomed_leader, std::chrono::seconds(10));
    REQUIRE(leader_status);
    CHECK(WIFSIGNALED(*leader_status));
    CHECK(WTERMSIG(*leader_status) == SIGKILL);
    CHECK(wait_dead(doomed_member, std::chrono::seconds(10)));

    // The group that was removed from the list is untouched.
    CHECK_FALSE(dead(spared_leader));
    CHECK_FALSE(dead(spared_member));
}

TEST_CASE("a keeper with nothing listed just exits when its pipe closes", "[keeper]") {
    Result<KeeperProcess> forked = fork_keeper();
    REQUIRE(forked.ok());
    KeeperProcess& keeper = forked.value();
    REQUIRE(keeper.pid > 0);
    keeper.pipe.reset();
    const auto status = wait_exit(keeper.pid, std::chrono::seconds(10));
    REQUIRE(status);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
}

TEST_CASE("the keeper holds no descriptor but its pipe", "[keeper]") {
    int extra[2];
    REQUIRE(::pipe(extra) == 0);  // inherited by the fork, then closed by the keeper
    Result<KeeperProcess> forked = fork_keeper();
    REQUIRE(forked.ok());
    KeeperProcess& keeper = forked.value();
    REQUIRE(keeper.pid > 0);
    // Once the keeper has closed its copy of extra[1], closing ours gives EOF on extra[0].
    ::close(extra[1]);
    std::vector<std::string> fds;
    const bool settled = [&] {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (;;) {
            fds.clear();
            const std::string dir = "/proc/" + std::to_string(keeper.pid) + "/fd";
            for (const auto& entry : std::filesystem::directory_iterator(dir))
                fds.push_back(entry.path().filename().string());
            if (fds.size() == 1) return true;
            if (std::chrono::steady_clock::now() > deadline) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }();
    INFO("descriptors of the keeper: " << fds.size());
    CHECK(settled);
    if (settled) {
        char byte = 0;
        CHECK(::read(extra[0], &byte, 1) == 0);  // EOF: no copy of the write end is left
    }
    ::close(extra[0]);
    keeper.pipe.reset();
    CHECK(wait_exit(keeper.pid, std::chrono::seconds(10)));
}

TEST_CASE("a keeper also kills a listed server's processes that left its group", "[keeper]") {
    // A server (our child, leading its session) with two descendants that left its group:
    // one by setpgid(0, 0), found by session; one by setsid() with the server's tag in its
    // environment, found by tag. The keeper is told the server's group and serial, and makes
    // the tag from this process's pid, as mcpd's keeper does from mcpd's.
    const std::uint32_t serial = 77;
    const std::string tag_entry =
        std::string(kProcessTagVariable) + "=" + process_tag(::getpid(), serial);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    Group server;
    server.leader = ::fork();
    REQUIRE(server.leader >= 0);
    if (server.leader == 0) {
        ::setsid();
        const pid_t grouped = ::fork();
        if (grouped == 0) {
            ::setpgid(0, 0);
            for (;;) ::pause();
        }
        const pid_t escaped = ::fork();
        if (escaped == 0) {
            ::setsid();
            char* const argv[] = {const_cast<char*>("sleep"), const_cast<char*>("300"), nullptr};
            char* const envp[] = {const_cast<char*>(tag_entry.c_str()), nullptr};
            ::execve("/bin/sleep", argv, envp);
            _exit(127);
        }
        const pid_t both[2] = {grouped, escaped};
        [[maybe_unused]] const ssize_t n = ::write(fds[1], both, sizeof both);
        for (;;) ::pause();
    }
    ::close(fds[1]);
    pid_t both[2] = {-1, -1};
    REQUIRE(::read(fds[0], both, sizeof both) == static_cast<ssize_t>(sizeof both));
    ::close(fds[0]);
    // Reaped here or, when the test fails early, killed by the guards.
    struct Guard {
        pid_t pid;
        ~Guard() { ::kill(pid, SIGKILL); }
    } guard_grouped{both[0]}, guard_escaped{both[1]};
    // The escaped one has exec'd: its environment is the one with the tag.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!process_environment_has(both[1], tag_entry) &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(process_environment_has(both[1], tag_entry));

    Result<KeeperProcess> forked = fork_keeper();
    REQUIRE(forked.ok());
    KeeperProcess& keeper = forked.value();
    REQUIRE(keeper.pid > 0);
    const std::string bytes = encode(KeeperOp::add, server.leader, serial);
    REQUIRE(::write(keeper.pipe.get(), bytes.data(), bytes.size()) ==
            static_cast<ssize_t>(bytes.size()));
    keeper.pipe.reset();
    REQUIRE(wait_exit(keeper.pid, std::chrono::seconds(10)));
    CHECK(wait_exit(server.leader, std::chrono::seconds(10)));
    CHECK(wait_dead(both[0], std::chrono::seconds(10)));
    CHECK(wait_dead(both[1], std::chrono::seconds(10)));
}
