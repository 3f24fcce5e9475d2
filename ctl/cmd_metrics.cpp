// mcpctl metrics [NAME...]: the traffic figures in the Prometheus text format, for
// node_exporter's textfile collector (the same text GET /metrics serves).
#include "common/control_protocol.h"
#include "common/metrics_text.h"
#include "ctl/command.h"

namespace mcpctl {

namespace {

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    return mcpd::control::to_json(mcpd::control::StatsRequest{.servers = line.args, .tools = true});
}

}  // namespace

extern const Command cmd_metrics{
    .name = "metrics",
    .usage = "metrics [NAME...]",
    .summary = "print the traffic figures as Prometheus metrics",
    .help =
        "The figures of 'mcpctl stats' in the Prometheus text format (version 0.0.4),\n"
        "of every server or of the named ones:\n"
        "  mcpd_server_up, mcpd_server_sessions, mcpd_server_sessions_opened_total,\n"
        "  mcpd_server_restarts_total, mcpd_server_cpu_seconds_total,\n"
        "  mcpd_server_resident_bytes, mcpd_server_proportional_bytes   per server\n"
        "  mcpd_server_peak_resident_bytes, mcpd_server_oom_kills_total per server\n"
        "  mcpd_requests_total (by outcome), mcpd_requests_in_flight,\n"
        "  mcpd_request_bytes_total (in, out), mcpd_request_duration_seconds\n"
        "                                     per server, method and tool\n"
        "For node_exporter's textfile collector, write to a temporary file and rename\n"
        "it into the collector's directory. [daemon] metrics_listen in the registry\n"
        "serves the same text over HTTP, to a scraper with the metrics_token_file's\n"
        "token. A user other than root and mcpd's own sees the servers it may use.\n"
        "--json prints mcpd's stats reply.\n",
    .options = {},
    .min_args = 0,
    .max_args = Command::kUnlimited,
    .build = build,
    .render = mcpd::metrics_text,
    .exec = exec_request,
};

}  // namespace mcpctl
