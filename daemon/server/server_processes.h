// A server's processes, found and signalled whether or not they stayed in its process group.
//
// A server leads its own session and process group (spawn.cpp), so a signal to the group
// reaches every process that stayed in it. A descendant may leave: setpgid(0, 0) keeps the
// session, setsid() leaves both. So a server's processes are, besides its group:
// - those in its session;
// - those carrying its tag, MCPD_PROCESS_TAG=<mcpd's pid>.<serial>, which spawn puts in the
//   server's environment and which its descendants inherit;
// - those below any of these or below the server itself.
// While mcpd runs, every descendant whose parent exits comes back to mcpd (it is their
// subreaper), so only mcpd's own descendants are considered: nothing else can be hit. The
// keeper, after mcpd is gone, goes by group, session and tag alone.
//
// One kind cannot be told apart from another server's: a descendant that left the session,
// cleared its environment and whose parent exited. It is stopped on mcpd's exit, with every
// other descendant of mcpd still alive then (kill_descendants).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/server/process_table.h"

namespace mcpd {

inline constexpr std::string_view kProcessTagVariable = "MCPD_PROCESS_TAG";

// The tag of the `serial`th server process mcpd `daemon` started: "<daemon>.<serial>".
std::string process_tag(pid_t daemon, std::uint32_t serial);

struct ServerMark {
    pid_t leader = -1;  // the server process: leader of its session and process group
    std::string tag;    // the value of MCPD_PROCESS_TAG in its environment; empty: none
};

// Whether the environment of `pid` carries the tag (a parameter, so tests need no /proc).
using TagCheck = std::function<bool(pid_t pid)>;

// The live (not zombie) processes of the server in `table`. `within` > 0: only descendants
// of `within`, never `within` itself.
std::vector<const ProcessEntry*> find_server_processes(const ProcessTable& table,
                                                       const ServerMark& mark, pid_t within,
                                                       const TagCheck& has_tag);

// The check against /proc/PID/environ.
TagCheck environment_tag_check(const ServerMark& mark);

struct SweepResult {
    std::size_t signalled = 0;      // processes signalled
    std::size_t outside_group = 0;  // of them, not in the server's process group
};

// Send `signo` to the server's processes outside its process group (the caller signals the
// group itself). Each is checked to be the process that was found, not a later one with its
// pid, before it is signalled.
SweepResult signal_escaped_processes(const ServerMark& mark, int signo, pid_t within);

// SIGKILL every process of the server, group included, until none is found (a few rounds:
// one may fork while it is being found).
SweepResult kill_server_processes(const ServerMark& mark, pid_t within);

// SIGKILL every descendant of `root` but `spare`, until none is left.
std::size_t kill_descendants(pid_t root, pid_t spare);

}  // namespace mcpd
