// The registry: the TOML file that lists the MCP servers mcpd runs.
//
// Loading never throws: it returns every problem it finds, each naming the file, line and
// column and saying what was expected, or a complete Registry with every default filled in.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/log.h"
#include "config/item_filter.h"
#include "config/sandbox.h"

namespace mcpd::config {

using namespace std::chrono_literals;

enum class RestartPolicy { always, on_failure, never };
enum class Sharing { shared, exclusive, serialized, project, user };
enum class Era { auto_detect, legacy, modern };
// Which requests in flight when a child dies are sent to its successor (docs/MULTIPLEXING.md,
// "Replay after a crash"): off: only those never written to it; safe: also the methods safe
// to repeat by the specification; annotated: also tools/call of a tool it marks read-only or
// idempotent (its annotations are trusted).
enum class Replay { off, safe, annotated };

std::string_view to_string(RestartPolicy policy);  // "always" | "on-failure" | "never"
// "shared" | "exclusive" | "serialized" | "project" | "user"
std::string_view to_string(Sharing sharing);
std::string_view to_string(Era era);  // "auto" | "legacy" | "modern"
std::string_view to_string(Replay replay);  // "off" | "safe" | "annotated"

// More than `burst` failed starts within `interval` puts a server in `failed`.
struct StartLimit {
    unsigned burst = 5;
    Duration interval = 60s;
    bool operator==(const StartLimit&) const = default;
};

// kProjectPlaceholder ({project}): config/sandbox.h.

// Who a child runs as when that is not mcpd's own user: a project's child on a daemon that
// runs as root runs as the user whose project it is. Set by the daemon, never read from the
// registry.
struct ChildIdentity {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // supplementary groups, as the user's session had them
    std::string user;           // USER and LOGNAME: the account's name, else the uid
    std::string home;           // HOME: the account's, else "/"
    bool operator==(const ChildIdentity&) const = default;
};

struct ServerConfig {
    std::string name;  // [A-Za-z0-9_.-]+
    std::string command;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;  // `env` table, applied after env_file
    // An absolute path, or empty; or "~/PATH": the file of the user the child runs as, read
    // when it starts, with that user's rights (env_file_vars then empty).
    std::string env_file;
    std::map<std::string, std::string> env_file_vars;  // its contents: secrets, never logged
    std::string cwd;                                   // absolute path, or empty (= daemon's cwd)
    Sharing sharing = Sharing::shared;
    Era era = Era::auto_detect;
    bool autostart = true;
    Duration idle_timeout = 0ms;  // 0: never stop an idle server
    RestartPolicy restart = RestartPolicy::on_failure;
    Duration restart_delay = 1s;
    Duration restart_delay_max = 60s;
    Duration stable_after = 30s;
    StartLimit start_limit;
    Duration start_timeout = 30s;
    Duration stop_grace = 2s;
    Duration stop_timeout = 2s;
    Duration request_timeout = 0ms;  // 0: no limit
    Replay replay = Replay::safe;
    Duration health_interval = 30s;  // 0: no health pings
    unsigned max_sessions = 0;       // 0: unlimited
    // Processes of this server at once where sessions get their own (sharing = "exclusive")
    // or each project gets one (sharing = "project"): one client must not be able to start
    // hundreds. 0: unlimited.
    unsigned max_children = 16;
    // sharing = "project" or "user": children one user of allow_users may have at once (0: half of
    // max_children, at least one); such a user never takes the last of max_children, which
    // is kept for mcpd's own user and root.
    unsigned max_children_per_user = 0;
    std::vector<std::string> roots;
    std::vector<std::string> allow_users;   // names or numeric uids, as written
    std::vector<std::string> allow_groups;  // names or numeric gids, as written
    // What its sessions are shown: a session of a server with filters is served as a group
    // of one (daemon/group_session.h).
    ItemFilters filters;
    // A log line per settled request (docs/STATS.md); unset: [daemon] request_log decides.
    std::optional<bool> request_log;
    // No process until a request needs one: sessions are answered from the persisted list
    // cache meanwhile; unset: [daemon] lazy decides (a loaded registry has it set in every
    // entry).
    std::optional<bool> lazy;
    // Its sandbox (docs/SANDBOX.md): while the file is read, its own; once loaded, layered on
    // [daemon.sandbox] (config::layered).
    Sandbox sandbox;
    // Set by the daemon for a project's child: the project's directory ({project} in sandbox
    // rules; never from the registry).
    std::string project_dir;
    // Set by the daemon for a child that runs as another user (never from the registry).
    std::optional<ChildIdentity> run_as;

    bool operator==(const ServerConfig&) const = default;
};

// Whether the entry's sessions get processes of their own (one per session, per project or
// per user) rather than the entry's one process.
inline bool starts_children(const ServerConfig& server) {
    return server.sharing == Sharing::exclusive || server.sharing == Sharing::project ||
           server.sharing == Sharing::user;
}

// Whether the entry's children are its users' own: one per (user, project) or one per user,
// each run as its user on a daemon running as root.
inline bool children_per_user(const ServerConfig& server) {
    return server.sharing == Sharing::project || server.sharing == Sharing::user;
}

struct DaemonConfig {
    std::string socket;  // empty: the caller picks the default path
    // Who else may reach the socket file (peer checks still apply to each connection): its
    // group (a name or number; empty: mcpd's own) and its mode (0: 0600, or 0660 with a group).
    std::string socket_group;
    unsigned socket_mode = 0;
    log::Level log_level = log::Level::info;  // words: log::kLevelNames
    std::size_t max_message_bytes = 16 * 1024 * 1024;
    // Output queued for a session that does not read; past it the session is cut off.
    std::size_t max_session_queue_bytes = 4 * 1024 * 1024;
    // Output queued for all sessions and control connections together; past it the largest
    // queues are cut first. At least max_session_queue_bytes.
    std::size_t max_queued_output = 64 * 1024 * 1024;
    // Where GET /metrics is served, as written and checked by parse_listen_address
    // (common/listen_address.h); empty: nowhere.
    std::string metrics_listen;
    // The file holding the bearer token GET /metrics asks for (absolute); required with
    // metrics_listen.
    std::string metrics_token_file;
    // A log line per settled request of every server whose own request_log is unset.
    bool request_log = false;
    // Every server whose own lazy is unset is lazy.
    bool lazy = false;
    // A control connection with no complete request for this long is closed (followers,
    // waiters and sessions excepted).
    Duration control_idle_timeout = 10s;
    // Connections (control connections and sessions) root and mcpd's own user may each hold;
    // past it their oldest idle control connections make way (daemon/control/connection_limits.h).
    std::size_t max_owner_connections = 512;
    // Where the Streamable HTTP front door listens (docs/HTTP.md): "unix:PATH" and TCP
    // addresses as parse_listen_address reads them. Unset: a unix socket beside the control
    // socket; empty: nowhere.
    std::optional<std::vector<std::string>> http_listen;
    // HTTP sessions one user may hold at once (root and mcpd's user too).
    std::size_t http_max_sessions_per_user = 64;
    // An HTTP session with no request and no open stream for this long is let go; its id
    // still resumes it (the session is rebuilt from the id).
    Duration http_session_idle_timeout = std::chrono::minutes(30);
    // A request's head and body must arrive within this; a kept-alive connection with no
    // request for this long is closed.
    Duration http_request_timeout = std::chrono::seconds(30);
    // How often an open SSE stream gets a comment line, so proxies keep it open.
    Duration http_keepalive_interval = std::chrono::seconds(15);
    // Per HTTP session, the bytes of sent SSE events kept for a client that resumes a stream
    // with Last-Event-ID.
    std::size_t http_replay_bytes = 1024 * 1024;
    // [daemon.sandbox]: the rules every server's own sandbox is layered on.
    Sandbox sandbox;
    bool operator==(const DaemonConfig&) const = default;
};

// Whether `server` is lazy: its own setting, else the daemon's.
inline bool is_lazy(const ServerConfig& server, const DaemonConfig& daemon) {
    return server.lazy.value_or(daemon.lazy);
}
// How long a lazy server's child may sit idle before it stops: its idle_timeout, or 10
// minutes when it has none.
inline Duration lazy_idle_timeout(const ServerConfig& server) {
    return server.idle_timeout.count() > 0 ? server.idle_timeout : Duration(std::chrono::minutes(10));
}

// Whether `server`'s settled requests are logged: its own request_log, else the daemon's.
inline bool logs_requests(const DaemonConfig& daemon, const ServerConfig& server) {
    return server.request_log.value_or(daemon.request_log);
}

// One server of a group, with the filters of its [groups.G.SERVER] table.
struct GroupMember {
    std::string server;
    ItemFilters filters;
    bool operator==(const GroupMember&) const = default;
};

// [groups.NAME]: one MCP session over several servers (docs/GROUPS.md).
struct GroupConfig {
    std::string name;                  // as a server name; never also a server's
    std::vector<GroupMember> members;  // in the order of `servers`
    ItemFilters filters;               // for every member
    // Between a member's name and its tools' and prompts' names: "github__create_issue".
    std::string separator = "__";
    bool operator==(const GroupConfig&) const = default;
};

struct Registry {
    std::string path;  // the file it was loaded from
    DaemonConfig daemon;
    std::vector<ServerConfig> servers;  // in file order
    std::vector<GroupConfig> groups;    // in file order

    const ServerConfig* find(std::string_view name) const;
    const GroupConfig* find_group(std::string_view name) const;
};

struct ConfigError {
    std::string file;
    int line = 0;    // 1-based; 0 when the error is about the whole file
    int column = 0;  // 1-based; 0 when unknown
    std::string message;

    // "file:line:column: message" (or "file: message" without a position).
    std::string to_string() const;
};

struct LoadResult {
    std::optional<Registry> registry;  // set only when errors is empty
    std::vector<ConfigError> errors;
};

// Read and validate the registry at `path`.
LoadResult load_registry(const std::string& path);

// Validate registry text; `path` is used in messages and to resolve relative paths
// (env_file, cwd) against its directory.
LoadResult parse_registry(std::string_view text, const std::string& path);

}  // namespace mcpd::config
