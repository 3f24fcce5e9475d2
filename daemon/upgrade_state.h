// What one mcpd hands to the binary that replaces it in place (docs/UPGRADE.md): the body of
// the state file (common/state_file.h), read and checked here before anything of it is used.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "daemon/http/http_carry.h"
#include "daemon/instance_key.h"
#include "daemon/mux/project.h"
#include "daemon/mux/router_carry.h"

namespace mcpd {

// A running server process handed to the new binary (ManagedServer::take_over).
struct CarriedProcess {
    int pid = -1;
    std::string tag;  // MCPD_PROCESS_TAG (daemon/server/server_processes.h)
    int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;  // kept open across the exec
    std::string begun_stdout, begun_stderr;  // a line each pipe had begun, read, not ended
    std::uint64_t next_id = 1;               // mcpd's next request id for the child
    nlohmann::json initialize_result = nlohmann::json::object();
    std::string protocol_version;
    bool modern = false;
    std::vector<std::uint64_t> abandoned;  // mcpd's requests whose answers are swallowed
    bool idle_armed = false;               // its idle_timeout was counting
    std::vector<std::string> logs;         // its stderr lines mcpd keeps (mcpctl logs)
};

nlohmann::json to_json(const CarriedProcess& process);
// Every field by its type; begun lines are base64url; descriptors above stdio.
Result<CarriedProcess> read_carried_process(const nlohmann::json& process);

// Which instance of its registry entry a carried server or session route is, when not the
// entry's shared one: a session's private process, a project's (or user's) child, or a
// dual-era server's legacy process.
struct CarriedInstance {
    InstanceKind kind = InstanceKind::exclusive;
    std::string qualifier;          // InstanceKey::qualifier
    std::optional<Project> project;  // the project it serves (a server's only)
};

nlohmann::json to_json(const Project& project);
Result<Project> read_carried_project(const nlohmann::json& project);

// A server's box (docs/SANDBOX.md): how the sandbox of the child it ran was enforced, and its
// cgroup leaves with their counts. The box itself is the kernel's, held by the process.
struct CarriedBox {
    bool boxed = false;  // a child of it ran in a sandbox: what was enforced, and what not
    std::vector<std::string> enforced, unenforced;
    std::string cgroup_leaf;                // the running process's leaf (empty: none)
    std::vector<std::string> ended_leaves;  // of ended processes, not yet removed
    std::uint64_t oom_kills = 0;            // of ended processes
    bool counted = false;                   // a leaf was ever used

    bool operator==(const CarriedBox&) const = default;
};

nlohmann::json to_json(const CarriedBox& box);
// Every field by its type; leaves are absolute paths without "..".
Result<CarriedBox> read_carried_box(const nlohmann::json& box);

// What the pool keeps of an entry beyond its instances (ServerPool): when it was first added,
// and what its instances that were freed had counted.
struct CarriedPoolEntry {
    std::string name;
    std::int64_t added_ms = 0;  // how long ago it was added
    std::optional<CarriedStats> gone;
};

struct CarriedServer {
    std::string name;  // the registry entry
    nlohmann::json supervisor;  // Supervisor::snapshot()
    std::optional<CarriedProcess> process;  // its running process, when it has one
    std::optional<CarriedRouter> router;    // its router's state (none in a version 1 state)
    std::optional<CarriedInstance> instance;  // none: the entry's shared instance
    std::optional<CarriedBox> box;  // none: never boxed nor in a cgroup (version 3)
};

// A group session's member: its session on a member server's process (none when it was left
// out), routed as it was.
struct CarriedGroupMember {
    std::uint64_t id = 0;
    std::string server;
    std::optional<routing::SessionState> router;  // none: left out, on no process
    std::optional<CarriedInstance> instance;      // its route, when not to the shared instance
    std::optional<Project> working_project;
};

// What makes a session a group session: which group (made again from the registry), its
// members, and its GroupRouter's state.
struct CarriedGroup {
    std::string kind;  // "registry" ([groups.NAME]), "adhoc" (a+b), "solo" (a server with filters)
    std::string name;
    std::vector<CarriedGroupMember> members;
    nlohmann::json router = nlohmann::json::object();  // GroupRouter::carried()
};

// A client session handed to the new binary (SessionTable::adopt_carried): a session on the
// control socket, or one whose descriptors an `mcpctl connect` passed, with that connection.
struct CarriedSession {
    std::uint64_t id = 0;
    std::string server;  // the registry entry it is attached to
    bool passed_fds = false;
    int fd = -1;         // its socket, or (passed) the client's input
    int output_fd = -1;  // passed: the client's output
    int link_fd = -1;    // passed: the `mcpctl connect` connection, told when the session ends
    std::string unread;     // read from the client, not yet handed to its server
    std::string unwritten;  // queued for the client, not yet written
    routing::SessionState router;  // its protocol state (daemon/mux/router_carry.h)
    std::optional<CarriedInstance> instance;  // its route, when not to the shared instance
    // A legacy client: the instance it came through (shared: kind shared, no qualifier).
    std::optional<std::pair<InstanceKind, std::string>> modern;
    std::optional<Project> working_project;   // the project of the directory it attached from
    std::optional<CarriedGroup> group;        // a group session's (`router` is then unused)
    // An HTTP session's transport (version 3): no descriptors of its own, its connections are
    // the front door's.
    std::optional<CarriedHttpSession> http;
};

nlohmann::json to_json(const CarriedSession& session);
nlohmann::json to_json(const CarriedHttpSession& session);
nlohmann::json to_json(const CarriedHttpFront& front);
Result<CarriedHttpSession> read_carried_http_session(const nlohmann::json& session);
Result<CarriedSession> read_carried_session_entry(const nlohmann::json& session);

struct UpgradeState {
    std::string mcpd_version;  // of the process that wrote it
    pid_t pid = 0;             // the process: the same after the exec
    std::string config_path;
    std::string socket_path;
    // Where the control socket really is (systemd may have bound it elsewhere), whether
    // systemd passed it, and the listening descriptor kept open across the exec.
    std::string listening_path;
    bool socket_activated = false;
    int control_fd = -1;
    // The keeper (daemon/server/keeper.h) and its pipe's write end; -1: none.
    pid_t keeper_pid = -1;
    int keeper_fd = -1;
    // The HTTP front door's listening sockets, by configured address, kept open.
    std::vector<std::pair<std::string, int>> http_listeners;
    // The metrics listener ([daemon] metrics_listen as configured, and its socket); none.
    std::optional<std::pair<std::string, int>> metrics_listener;
    std::int64_t uptime_ms = 0;
    std::uint64_t upgrades = 0;  // upgrades in place before this one
    std::vector<CarriedServer> servers;
    std::uint64_t next_session = 1;  // the next session id (version 2)
    // The `mcpctl logs -f` connections, each with the server whose log it follows.
    std::vector<std::pair<int, std::string>> followers;
    std::vector<CarriedSession> sessions;
    // The HTTP front door's connections and counters (version 3); none: no HTTP front door.
    std::optional<CarriedHttpFront> http;
    // Per registry entry, what the pool keeps beyond its instances (version 3).
    std::vector<CarriedPoolEntry> pool;
};

nlohmann::json to_json(const UpgradeState& state);
// Every descriptor `state` names (listeners, the keeper's pipe, processes' pipes, sessions'
// descriptors and links, followers): what is kept open across the exec.
std::vector<int> kept_descriptors(const UpgradeState& state);
// The process groups of the carried processes (each leads its own): what the keeper lists.
std::vector<pid_t> carried_groups(const UpgradeState& state);
// Every field read by its type, and every server's supervisor state restored into a scratch
// supervisor, so that a state the new binary would not take is refused before the exec. A
// version 1 state has no routers and no sessions.
Result<UpgradeState> parse_upgrade_state(const nlohmann::json& body);

// mcpd --check-state FD: read the state in FD, check it, and print the acknowledgement on
// stdout (exit 0), or the reason it cannot be taken on stderr (exit 1).
int check_state_command(const std::string& fd_text);

// mcpd --restore-state FD: the state in FD (a number on the command line), read and checked;
// the descriptor is closed.
Result<UpgradeState> take_upgrade_state(const std::string& fd_text);

// A command line to run again after an upgrade: `args` without any --restore-state and its
// value (the exec adds the new one).
std::vector<std::string> arguments_to_keep(const std::vector<std::string>& args);

}  // namespace mcpd
