// mcpctl status [NAME...]: one table row per server. Every text cell goes through field_text,
// which escapes control characters (a failed server's error may quote what it printed).

#include "common/control_protocol.h"
#include "common/terminal_text.h"
#include "ctl/command.h"
#include "ctl/lazy_state.h"
#include "ctl/output.h"

namespace mcpctl {

namespace {

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    return mcpd::control::to_json(mcpd::control::StatusRequest{line.args});
}

// A duration field in milliseconds as format_age writes it, "-" when absent or null.
std::string age_text(const nlohmann::json& object, std::string_view key) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number()) return "-";
    return mcpd::format_age(mcpd::Duration(it->get<std::int64_t>()));
}

// "backoff (next in 3s)"; a lazy server's sleep; other states as they are.
std::string state_text(const nlohmann::json& server) {
    std::string state = field_text(server, "state");
    if (std::string lazy = lazy_state_text(server); !lazy.empty()) return lazy;
    if (state == "backoff" && server.contains("next_start_ms") &&
        server["next_start_ms"].is_number())
        state += " (next in " + age_text(server, "next_start_ms") + ")";
    return state;
}

// "-15 (term, stopped) 2m00s ago": status, how the process ended and why, when.
std::string last_exit_text(const nlohmann::json& server) {
    const auto it = server.find("last_exit");
    if (it == server.end() || !it->is_object()) return "-";
    const nlohmann::json& last = *it;
    std::string text = field_text(last, "status");
    std::vector<std::string> how;
    for (const char* key : {"step", "reason"})
        if (last.contains(key) && last[key].is_string()) how.push_back(field_text(last, key));
    if (!how.empty()) text += " (" + join(how, ", ") + ")";
    if (last.contains("ago_ms") && last["ago_ms"].is_number()) {
        // Appended piece by piece: gcc 12 at -O3 warns about `" " + string` (a false -Wrestrict).
        text += ' ';
        text += age_text(last, "ago_ms");
        text += " ago";
    }
    return text;
}

std::string render(const nlohmann::json& result) {
    const auto servers = result.find("servers");
    if (servers == result.end() || !servers->is_array() || servers->empty())
        return "no servers to show\n";

    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> errors;
    for (const auto& server : *servers) {
        const std::string name = field_text(server, "name");
        rows.push_back({name, state_text(server), field_text(server, "pid"),
                        age_text(server, "uptime_ms"), field_text(server, "restarts"),
                        last_exit_text(server), field_text(server, "sessions")});
        // sharing = "project": a row per child, under its server, named by its project.
        if (const auto children = server.find("children");
            children != server.end() && children->is_array()) {
            for (const auto& child : *children) {
                rows.push_back({"  " + field_text(child, "project"), state_text(child),
                                field_text(child, "pid"), age_text(child, "uptime_ms"),
                                field_text(child, "restarts"), "-", field_text(child, "sessions")});
            }
        }
        if (server.contains("error") && server["error"].is_string())
            errors.push_back(name + ": " + field_text(server, "error"));
        // What its box could not hold, and what the OOM killer ended (docs/SANDBOX.md).
        if (const auto oom = server.find("oom_kills");
            oom != server.end() && oom->is_number_integer() && oom->get<std::int64_t>() > 0) {
            const std::int64_t kills = oom->get<std::int64_t>();
            errors.push_back(name + ": " + std::to_string(kills) +
                             (kills == 1 ? " process" : " processes") +
                             " ended by the kernel's OOM killer at its memory limit");
        }
        if (const auto box = server.find("sandbox"); box != server.end() && box->is_object()) {
            if (const auto unenforced = box->find("unenforced");
                unenforced != box->end() && unenforced->is_array()) {
                for (const auto& why : *unenforced) {
                    if (why.is_string())
                        errors.push_back(name + ": sandbox not enforced: " +
                                         mcpd::escape_controls(why.get<std::string>()));
                }
            }
        }
    }
    std::string text =
        format_table({"NAME", "STATE", "PID", "UPTIME", "RESTARTS", "LAST EXIT", "SESSIONS"}, rows);
    if (!errors.empty()) text += '\n' + join(errors, "\n") + '\n';
    // Groups: one line each, and a line per member left out of one of its sessions.
    if (const auto groups = result.find("groups"); groups != result.end() && groups->is_array()) {
        for (const auto& group : *groups) {
            std::vector<std::string> members;
            if (group.contains("servers") && group["servers"].is_array())
                for (const auto& server : group["servers"])
                    members.push_back(server.is_string() ? mcpd::escape_controls(server.get<std::string>()) : "?");
            text += "\ngroup " + field_text(group, "name") + " (" + join(members, ", ") + "): " +
                    field_text(group, "sessions") + " sessions";
            if (const auto left = group.find("left_out"); left != group.end() && left->is_array()) {
                for (const auto& out : *left) {
                    text += "\n  " + field_text(out, "server") + " is left out of session " +
                            field_text(out, "session") + ": " + field_text(out, "reason");
                }
            }
        }
        if (!groups->empty()) text += '\n';
    }
    return text;
}

}  // namespace

extern const Command cmd_status{
    .name = "status",
    .usage = "status [NAME...]",
    .summary = "show the servers' states",
    .help =
        "One row per server:\n"
        "  NAME       the server's name in the registry\n"
        "  STATE      stopped, starting, running, backoff (with the time to the next\n"
        "             attempt), stopping, or failed (gave up until 'mcpctl start')\n"
        "  PID        the running process, '-' when there is none\n"
        "  UPTIME     how long the process has been running\n"
        "  RESTARTS   automatic restarts since the last manual start\n"
        "  LAST EXIT  the last exit status (minus the signal number for a signal),\n"
        "             how it ended (exit, eof, term, kill), why, and how long ago\n"
        "  SESSIONS   MCP sessions attached to the server\n"
        "A server with sharing = \"project\" has a row per child below its own, named\n"
        "by the child's project directory.\n"
        "Below the table, a line per group (with its sessions) and per member left out\n"
        "of a group session, with why (a failed server, another protocol version).\n"
        "A failed server's error is printed below the table, and so are the rules of a\n"
        "server's sandbox this machine cannot enforce and the processes the kernel's OOM\n"
        "killer ended at its memory limit. The exit status is 0\n"
        "whenever mcpd answered, failed servers or not; --json prints mcpd's reply.\n",
    .options = {},
    .min_args = 0,
    .max_args = Command::kUnlimited,
    .build = build,
    .render = render,
    .exec = exec_request,
};

}  // namespace mcpctl
