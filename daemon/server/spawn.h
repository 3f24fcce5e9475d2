// Starting a server process: command lookup, environment, fork and exec.
//
// Everything about the moment between fork and exec lives here (ninja's lesson: subprocess
// hygiene in one place): own session and process group, parent-death signal, default signal
// dispositions and mask, stdio on pipes, every other fd closed on exec, and exec errors
// reported back through a close-on-exec pipe as a sentence instead of a silent exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "config/registry.h"
#include "daemon/sandbox/sandbox_child.h"

namespace mcpd {

struct SpawnRequest {
    std::string path;               // resolved executable
    std::vector<std::string> argv;  // argv[0] is the command as written
    std::vector<std::string> env;   // KEY=VALUE
    std::string cwd;                // empty: inherit
    // Run as this user (groups, gid, then uid, before the cwd is entered); none: as mcpd.
    std::optional<config::ChildIdentity> identity = std::nullopt;
    // Its box (daemon/sandbox/): entered before the identity changes, Landlock last before
    // exec. Null or inactive: none.
    const sandbox::ChildSandbox* sandbox = nullptr;
    // The cgroup leaf it joins first of all (its cgroup.procs); empty: mcpd's own cgroup.
    // Required: the leaf holds its limits, and a child that cannot join it does not start;
    // otherwise (accounting only) it starts in mcpd's cgroup.
    std::string cgroup_procs = {};
    bool cgroup_required = false;
};

struct SpawnedProcess {
    int pid = -1;
    std::string tag;    // MCPD_PROCESS_TAG in its environment (daemon/server/server_processes.h)
    UniqueFd stdin_fd;  // parent ends, non-blocking and close-on-exec
    UniqueFd stdout_fd;
    UniqueFd stderr_fd;
};

// Find `command` as execvp would, but against the PATH the child will get: a name without
// '/' is searched in `path_var`; a relative path with '/' is taken from `base_dir`. The path
// to execute, or why there is none (a permanent failure).
Result<std::string> resolve_command(const std::string& command, const std::string& path_var,
                                    const std::string& base_dir);

// The child's environment: a small allow-list of the daemon's own variables (HOME, USER,
// PATH, locale, XDG dirs, ...; for a child that runs as another user, its HOME, USER and
// LOGNAME instead, and none of mcpd's XDG directories), then the env_file, then `env`. systemd's
// variables for the daemon (NOTIFY_SOCKET, LISTEN_*, WATCHDOG_*) never pass, whatever the registry
// says.
std::vector<std::string> build_child_environment(const config::ServerConfig& server,
                                                 const char* const* parent_environ);

// The value of `key` in a KEY=VALUE list, or empty.
std::string find_env(const std::vector<std::string>& env, const std::string& key);

// Fork and exec, with MCPD_PROCESS_TAG added to the environment (whatever `env` says), so
// descendants that leave the process group can still be found. Blocks only until the child
// has exec'd or failed to. A failure is transient when the system ran short (pipes, fork,
// descriptors, memory), not the server: worth trying again later.
Result<SpawnedProcess> spawn_process(const SpawnRequest& request);

}  // namespace mcpd
