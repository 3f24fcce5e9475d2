// mcpctl stats [NAME...] [--tools] [--sessions] [--children]: the traffic figures of
// docs/STATS.md, once.
#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/stats_view.h"

namespace mcpctl {

namespace {

constexpr OptionSpec kOptions[] = {
    {'\0', "tools", "", "a row per tool and method of each server too"},
    {'\0', "sessions", "", "a row per session of each server too"},
    {'\0', "children", "", "a row per process of each server too"},
};

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    return mcpd::control::to_json(
        mcpd::control::StatsRequest{.servers = line.args,
                                    .tools = line.has("tools"),
                                    .sessions = line.has("sessions"),
                                    .children = line.has("children")});
}

}  // namespace

extern const Command cmd_stats{
    .name = "stats",
    .usage = "stats [NAME...] [--tools] [--sessions] [--children]",
    .summary = "show what the sessions asked of each server: calls, errors, latency",
    .help =
        "One row per server, of every server or of the named ones:\n"
        "  SERVER  the server's name in the registry\n"
        "  STATE   as in 'mcpctl status'\n"
        "  CALL/S  requests settled per second over the last 10 seconds\n"
        "  AVG/S   requests settled per second since the server was added\n"
        "  ERR%    of the settled requests, those that failed: a JSON-RPC error, a tool\n"
        "          result with isError, a timeout, or the server's process going away\n"
        "          (cancelled requests count as settled, not as failed)\n"
        "  P50     the median latency, from forwarding to the answer\n"
        "  P99     the 99th percentile latency (both to a bucket: 50us ... 60s)\n"
        "  IN-FL   requests sent and not yet settled\n"
        "  SESS    sessions attached now\n"
        "  CPU%    CPU used by the server's processes since the previous sample (100 is\n"
        "          one CPU)\n"
        "  RSS     their resident memory\n"
        "Below the table, the restarts of each server that restarted, with their reasons,\n"
        "and each server's peak memory (and OOM kills, where mcpd has a cgroup for it).\n"
        "With --tools, a table per tool (tools/call) and method: SERVER, TOOL/METHOD,\n"
        "CALLS, ERR%, P50, P99, IN-FL, and the bytes of the requests (IN) and answers (OUT).\n"
        "With --sessions, a table per session: SERVER, ID, CLIENT (name and version from\n"
        "its initialize), PID and UID of the process that attached it, CALLS, ERR%, P99,\n"
        "IN-FL.\n"
        "With --children, a table per process of each server (one for a shared server; one\n"
        "per session, project, legacy or retired process where it has several): SERVER,\n"
        "KIND, PID, PROJECT, SESS, CALLS, ERR%, P99, IN-FL, RSS.\n"
        "'-' where there is no figure (no process, nothing settled yet). --json prints\n"
        "mcpd's reply; see docs/STATS.md for its fields.\n",
    .options = kOptions,
    .min_args = 0,
    .max_args = Command::kUnlimited,
    .build = build,
    .render = stats_text,
    .exec = exec_request,
};

}  // namespace mcpctl
