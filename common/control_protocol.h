// The control protocol spoken on mcpd's Unix socket (docs/CONTROL.md): its version, error
// codes and shared defaults, and typed builders and parsers for every request, reply and
// message. mcpd and mcpctl build and read their lines only through these, so the two sides
// cannot drift apart. ctl/wait/mcpctl_wait.c is C and reads the `ended` line by hand: it
// follows ended_message() below, whose exact bytes a unit test pins.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/enum_names.h"
#include "common/result.h"
#include "common/socket_location.h"

namespace mcpd::control {

// Bump whenever a request or reply changes shape; both sides check it on every request.
inline constexpr int kProtocolVersion = 1;

// Error codes carried in {"ok":false,"error":{"code":...}}.
namespace code {
inline constexpr std::string_view protocol = "protocol";        // version mismatch
inline constexpr std::string_view bad_request = "bad_request";  // malformed request
inline constexpr std::string_view unknown_command = "unknown_command";
inline constexpr std::string_view not_found = "not_found";  // no such server
inline constexpr std::string_view denied = "denied";        // peer credentials refused
inline constexpr std::string_view failed = "failed";        // a server failed to start
inline constexpr std::string_view timeout = "timeout";      // --wait ran out
inline constexpr std::string_view config = "config";        // reload found errors
inline constexpr std::string_view shutting_down = "shutting_down";
inline constexpr std::string_view limit = "limit";  // max_sessions reached
inline constexpr std::string_view busy = "busy";    // upgrade: something stands in the way now
}  // namespace code

// What a request may leave out, and how far its numbers may go: the same on both sides.
inline constexpr std::chrono::milliseconds kDefaultWait{60'000};  // timeout_ms with wait
inline constexpr std::chrono::milliseconds kMaxWait{7LL * 24 * 3600 * 1000};  // a week
inline constexpr std::int64_t kDefaultLogLines = 50;
inline constexpr std::int64_t kMaxLogLines = 1'000'000;
// attach with pass_fds: the byte the descriptors travel with, and how many travel.
inline constexpr char kFdsByte = 'F';
inline constexpr std::size_t kPassedFds = 2;

enum class Command {
    version,
    status,
    start,
    stop,
    restart,
    reload,
    logs,
    shutdown,
    attach,
    sessions,
    stats,
    clear_cache,
    http_token,
    upgrade
};

inline constexpr EnumName<Command> kCommandNames[] = {
    {"version", Command::version},   {"status", Command::status},     {"start", Command::start},
    {"stop", Command::stop},         {"restart", Command::restart},   {"reload", Command::reload},
    {"logs", Command::logs},         {"shutdown", Command::shutdown}, {"attach", Command::attach},
    {"sessions", Command::sessions}, {"stats", Command::stats},
    {"clear_cache", Command::clear_cache}, {"http_token", Command::http_token},
    {"upgrade", Command::upgrade},
};

std::string_view to_string(Command command);
std::optional<Command> command_named(std::string_view name);

// ---- The envelope of a request.

// Whether a request's "protocol" is exactly this version: an integer (not 1.0 or "1") with
// that value (not one that only truncates to it, such as 4294967297).
bool speaks_our_protocol(const nlohmann::json& request);
// The sentence refusing a request of another version (or none), naming both.
std::string protocol_mismatch(const nlohmann::json& request);

// {"protocol": kProtocolVersion, "command": NAME}: all of a version or shutdown request, and
// the start of every other.
nlohmann::json request(Command command);

// ---- Requests: to_json builds the line a client sends; parse_* reads one as mcpd received
// it. A parser reads every field by its type before anything is done, so a bad request changes
// nothing; its failure is the sentence of a bad_request reply.

struct StatusRequest {
    std::vector<std::string> servers;  // empty: every server the peer may see
};
// start, stop and restart.
struct ActionRequest {
    Command command = Command::start;
    std::vector<std::string> servers;  // at least one
    bool wait = false;
    std::chrono::milliseconds timeout = kDefaultWait;  // sent only with wait
};
// upgrade: replace mcpd in place with `binary` (docs/UPGRADE.md).
struct UpgradeRequest {
    std::string binary;  // empty: the file mcpd was started from
};
// At most this long: a path, not a document.
inline constexpr std::size_t kMaxBinaryPathBytes = 4096;
struct ReloadRequest {
    bool allow_remove_all = false;
};
struct LogsRequest {
    std::string server;
    std::int64_t lines = kDefaultLogLines;
    bool follow = false;
};
struct AttachRequest {
    std::string server;  // one server or group; for several, their names joined by '+'
    // `mcpctl connect a b c`: one session over these servers (an ad-hoc group). Empty for one.
    std::vector<std::string> servers;
    bool pass_fds = false;
    // The directory `mcpctl connect` runs in (absolute): a sharing = "project" server's
    // sessions without roots share a child by it. Empty: not given.
    std::string cwd;
};
struct SessionsRequest {
    std::optional<std::string> server;  // none: every session the peer may see
};
// The traffic figures of docs/STATS.md.
struct StatsRequest {
    std::vector<std::string> servers;  // empty: every server the peer may see
    bool tools = false;     // each server's figures per tool and method too
    bool sessions = false;  // and per session
    bool children = false;  // and per process, where a server has several
};

// `mcpctl cache clear`: drop lazy servers' cached lists.
struct ClearCacheRequest {
    std::vector<std::string> servers;  // empty: every entry of the cache
};

// `mcpctl http-token [--rotate]`: the asker's own bearer token for mcpd's HTTP addresses; the
// result is {"token": T, "addresses": [...]}.
struct HttpTokenRequest {
    bool rotate = false;  // a new token; the old one stops working
};

nlohmann::json to_json(const StatusRequest& request);
nlohmann::json to_json(const ActionRequest& request);
nlohmann::json to_json(const ReloadRequest& request);
nlohmann::json to_json(const UpgradeRequest& request);
nlohmann::json to_json(const LogsRequest& request);
nlohmann::json to_json(const AttachRequest& request);
nlohmann::json to_json(const SessionsRequest& request);
nlohmann::json to_json(const StatsRequest& request);
nlohmann::json to_json(const ClearCacheRequest& request);
nlohmann::json to_json(const HttpTokenRequest& request);

Result<StatusRequest> parse_status(const nlohmann::json& request);
// `command` is the one the request was dispatched as: start, stop or restart.
Result<ActionRequest> parse_action(const nlohmann::json& request, Command command);
Result<ReloadRequest> parse_reload(const nlohmann::json& request);
Result<UpgradeRequest> parse_upgrade(const nlohmann::json& request);
Result<LogsRequest> parse_logs(const nlohmann::json& request);
Result<AttachRequest> parse_attach(const nlohmann::json& request);
// Never fails: a "server" that is not a string is read as none, as mcpd always has.
SessionsRequest parse_sessions(const nlohmann::json& request);
Result<StatsRequest> parse_stats(const nlohmann::json& request);
Result<ClearCacheRequest> parse_clear_cache(const nlohmann::json& request);
Result<HttpTokenRequest> parse_http_token(const nlohmann::json& request);

// ---- Replies: {"ok": true, "result": {...}} or {"ok": false, "error": {...}}.

nlohmann::json ok_reply(nlohmann::json result);
// "details" only when there are any (reload errors: one line each).
nlohmann::json error_reply(std::string_view code, std::string_view message,
                           const std::vector<std::string>& details = {});

// A reply as a client reads it, checked to be well formed.
struct Reply {
    bool ok = false;
    nlohmann::json result;  // when ok: the result ({} when the reply has none)
    nlohmann::json error;   // otherwise: {"code", "message"[, "details"]}, message a string
};
Result<Reply> parse_reply(const nlohmann::json& message);

// The results, one per command. STATUS, SESSION and the status reply's daemon object are
// built by the daemon parts that own their fields and pass through as JSON.
nlohmann::json version_result(std::string_view version, std::int64_t pid);
nlohmann::json status_result(nlohmann::json daemon, nlohmann::json servers);
nlohmann::json servers_result(nlohmann::json servers);  // start, stop, restart
struct ReloadResult {
    std::vector<std::string> added, removed, changed, unchanged;
};
nlohmann::json to_json(const ReloadResult& result);
nlohmann::json logs_result(const std::vector<std::string>& lines);
nlohmann::json shutdown_result();
// What the upgrade is about to exec: the binary, the state's size, and the count of upgrades in
// place mcpd's status will show once the new binary has taken over.
struct UpgradeResult {
    std::string binary;
    std::size_t state_bytes = 0;
    std::uint64_t upgrades = 0;
};
nlohmann::json to_json(const UpgradeResult& result);
struct AttachResult {
    std::string server;
    std::uint64_t session = 0;
    bool send_fds = false;  // the client is to send its descriptors now
};
nlohmann::json to_json(const AttachResult& result);
// Whether an attach result asks for the descriptors ("send_fds": true).
bool asks_for_fds(const nlohmann::json& attach_result);
nlohmann::json sessions_result(nlohmann::json sessions);
// clear_cache: how many entries went, in all and per named server (`servers` only when named).
struct ClearedCache {
    std::string server;
    std::size_t entries = 0;
};
nlohmann::json clear_cache_result(std::size_t entries, const std::vector<ClearedCache>& servers);

// ---- Messages that are not replies.

// {"log": LINE}: one new line for `logs --follow`; log_line reads it back.
nlohmann::json log_message(std::string_view line);
std::optional<std::string> log_line(const nlohmann::json& message);

// {"ended": {"reason": REASON, "status": 0 or 1}}: how a session on passed descriptors ended.
// Status 0 when the client ended it (end of file on its input), 1 when mcpd did.
struct Ended {
    std::string reason;  // empty when the message holds none
    bool by_client = false;
};
nlohmann::json ended_message(const Ended& ended);
// Nothing when `message` is not an ended message; a status other than the integer 0 is mcpd's.
std::optional<Ended> parse_ended(const nlohmann::json& message);

}  // namespace mcpd::control
