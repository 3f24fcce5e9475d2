// mcpctl sessions [NAME]: one table row per MCP session.
#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    mcpd::control::SessionsRequest request;
    if (!line.args.empty()) request.server = line.args.front();
    return mcpd::control::to_json(request);
}

std::string age_text(const nlohmann::json& session) {
    const auto it = session.find("age_ms");
    if (it == session.end() || !it->is_number()) return "-";
    return mcpd::format_age(mcpd::Duration(it->get<std::int64_t>()));
}

std::string render(const nlohmann::json& result) {
    const auto sessions = result.find("sessions");
    if (sessions == result.end() || !sessions->is_array() || sessions->empty())
        return "no sessions\n";
    // The PROJECT column only when a session has one (sharing = "project").
    bool projects = false;
    for (const auto& session : *sessions) projects = projects || session.contains("project");
    std::vector<std::vector<std::string>> rows;
    for (const auto& session : *sessions) {
        rows.push_back({field_text(session, "id"), field_text(session, "server"),
                        field_text(session, "pid"), field_text(session, "uid"),
                        client_text(session), field_text(session, "protocol"),
                        field_text(session, "in_flight"), age_text(session),
                        field_text(session, "transport")});
        if (projects) rows.back().push_back(field_text(session, "project"));
    }
    std::vector<std::string> header = {"ID",       "SERVER",    "PID", "UID",      "CLIENT",
                                       "PROTOCOL", "IN-FLIGHT", "AGE", "TRANSPORT"};
    if (projects) header.push_back("PROJECT");
    return format_table(header, rows);
}

}  // namespace

extern const Command cmd_sessions{
    .name = "sessions",
    .usage = "sessions [NAME]",
    .summary = "list the MCP sessions, of every server or of one",
    .help =
        "One row per MCP session (an agent attached with 'mcpctl connect'):\n"
        "  ID         the session's number, unique while mcpd runs\n"
        "  SERVER     the server it is attached to\n"
        "  PID, UID   the process that attached (mcpctl connect) and its user\n"
        "  CLIENT     the client's name and version from its initialize request\n"
        "  PROTOCOL   the MCP protocol version it negotiated\n"
        "  IN-FLIGHT  its requests the server has not answered yet\n"
        "  AGE        how long ago it attached\n"
        "  PROJECT    its project's directory (sharing = \"project\"), when any has one\n"
        "  TRANSPORT  fds when mcpd holds the agent's pipes, else how the bytes travel\n"
        "             (through the control socket when mcpctl copies them)\n"
        "'-' where mcpd does not know yet. --json prints mcpd's reply.\n",
    .options = {},
    .min_args = 0,
    .max_args = 1,
    .build = build,
    .render = render,
    .exec = exec_request,
};

}  // namespace mcpctl
