// The keeper: a tiny process forked at start-up that outlives a killed mcpd just long enough
// to kill the process groups of its servers.
//
// mcpd's own children die with it through PR_SET_PDEATHSIG, but their children (`sh -c`,
// `npx` -> `node`) do not. The keeper holds the read end of a pipe whose only write end is
// mcpd's (close-on-exec, so no server inherits it). mcpd writes one fixed-size message when a
// server's process group appears and one when it is gone. EOF on the pipe means mcpd has
// exited, however it exited: the keeper SIGKILLs every process of every server still listed
// (its group, its session and its tag: daemon/server/server_processes.h) and exits. After a normal
// shutdown the list is empty, so it only exits.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"

namespace mcpd {

enum class KeeperOp : std::uint32_t { add = 1, remove = 2 };

// One message on the keeper's pipe. Far below PIPE_BUF, so every write is atomic: messages
// are never split or interleaved.
struct KeeperMessage {
    std::uint32_t op = 0;  // a KeeperOp
    std::int32_t pgid = 0;
    std::uint32_t serial = 0;  // of the server's tag (process_tag); 0: none
};
static_assert(sizeof(KeeperMessage) == 12);

// The keeper's list of live process groups, fed the bytes read off the pipe.
class KeeperLedger {
public:
    // Apply every whole message in `bytes`; the start of a split one waits for its rest.
    // Unknown operations and group ids below 2 are ignored (kill(-1) would mean everyone).
    void feed(std::string_view bytes);
    // Each listed group with the serial of its tag.
    const std::map<pid_t, std::uint32_t>& groups() const { return groups_; }

private:
    std::string partial_;
    std::map<pid_t, std::uint32_t> groups_;
};

// Read `fd` until EOF (or an error other than EINTR) and return the groups left listed.
std::map<pid_t, std::uint32_t> read_keeper_pipe(int fd);

struct KeeperProcess {
    pid_t pid = -1;
    UniqueFd pipe;  // the write end: non-blocking, close-on-exec
};

// Fork a keeper. The child keeps only the pipe's read end, blocks every signal, reads until
// EOF, SIGKILLs the processes of the servers still listed (their tags made with the calling
// process's pid) and exits; it never returns into the caller's code.
Result<KeeperProcess> fork_keeper();

// mcpd's handle on its keeper. Process-wide, because servers are spawned and reaped from
// several places; every call is a no-op until start() succeeds, so code under unit test that
// spawns processes needs no keeper.
class Keeper {
public:
    static Keeper& instance();

    // Fork the keeper (before the event loop runs). On failure mcpd runs on without one.
    void start();
    // Take over the keeper an upgraded mcpd's predecessor started (docs/UPGRADE.md): the
    // same process, its pipe kept open across the exec, listing the groups of `tracked`.
    void adopt(pid_t pid, UniqueFd pipe, const std::vector<pid_t>& tracked = {});
    // The pipe's write end (an upgrade keeps it open across the exec); -1 without a keeper.
    int pipe_fd() const { return pipe_.get(); }
    bool running() const { return static_cast<bool>(pipe_); }
    pid_t pid() const { return pid_; }

    // A server's process group exists (with the serial of its tag) / is gone (after its
    // leader was reaped).
    void track(pid_t pgid, std::uint32_t serial);
    void untrack(pid_t pgid);

    // From the reaper: true when `pid` was the keeper itself (and notes that it is gone).
    bool reaped(pid_t pid, int status);

private:
    Keeper() = default;
    void send(KeeperOp op, pid_t pgid, std::uint32_t serial);

    pid_t pid_ = -1;
    UniqueFd pipe_;
    std::unordered_set<pid_t> tracked_;
};

}  // namespace mcpd
