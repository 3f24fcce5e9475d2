// Reaping every child of the daemon: its server processes and, as a subreaper, any orphaned
// grandchild that was reparented to it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <unordered_map>

#include "daemon/io/event_loop.h"
#include "daemon/server/server_processes.h"

namespace mcpd {

class Reaper {
public:
    // status: exit code, or minus the signal number.
    using ExitHandler = std::function<void(int status)>;

    // Installs the SIGCHLD watcher on `base`.
    explicit Reaper(event_base* base);

    // A server process that leads its own session and process group. When it exits, whatever
    // is left of it (its group, and the descendants that left the group: server_processes.h)
    // is killed before the leader is reaped (the unreaped zombie keeps the group and session
    // ids from being reused), then `on_exit` runs.
    void watch(const ServerMark& mark, ExitHandler on_exit);
    void forget(pid_t pid);

    // Reap until nothing is left. SIGCHLD coalesces, so one signal may mean many exits.
    void reap_all();

private:
    SignalWatcher sigchld_;
    struct Watched {
        ServerMark mark;
        ExitHandler on_exit;
    };
    std::unordered_map<pid_t, Watched> watched_;
};

// Exit code from a wait status, or minus the signal number.
int decode_wait_status(int status);

}  // namespace mcpd
