// Attaching a session to one server: admission and the instance that serves it (both decided
// by Placement), and the hand-over of the connection or of the passed descriptors. Groups are
// in control_commands_group.cpp.
#include <event2/bufferevent.h>
#include <event2/util.h>

#include "common/check.h"
#include "common/descriptors.h"
#include "common/log.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"
#include "daemon/group_attach.h"

namespace mcpd {

using nlohmann::json;

void ControlCommands::attach(ControlConnection& c, const json& request) {
    const Result<control::AttachRequest> parsed = control::parse_attach(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    if (!parsed->servers.empty()) {
        attach_group(c, parsed.value(), adhoc_group(parsed->servers));
        return;
    }
    if (const config::GroupConfig* group = daemon_.registry().find_group(parsed->server)) {
        attach_group(c, parsed.value(), registry_group(*group));
        return;
    }
    const Result<std::vector<ManagedServer*>> found = resolve(c, {parsed->server});
    if (!found) {
        c.reply_error(control::code::not_found, found.error());
        return;
    }
    ManagedServer& server = *found->front();
    const Supervisor& supervisor = server.supervisor();
    if (supervisor.state() == ServerState::failed) {
        c.reply_error(control::code::failed,
                      "server '" + server.name() + "' is failed: " + server.failure());
        return;
    }
    if (!server.config().filters.empty()) {
        // What its sessions are shown is filtered: served as a group of one.
        attach_group(c, parsed.value(), solo_group(server.config()));
        return;
    }
    std::optional<Project> project;
    if (!admit(c, server, parsed->cwd, project)) return;
    const SessionId id = daemon_.sessions().next_id();
    const std::string server_name = server.name();
    const PeerCredentials peer = c.peer();
    c.reply_ok(control::to_json(control::AttachResult{server_name, id, parsed->pass_fds}));
    if (!parsed->pass_fds) {
        BufferEvent bev = c.hand_over();
        if (bev == nullptr) return;  // cut off: it never read its replies
        daemon_.sessions().open(daemon_.placement().place(server, id, project), id, peer,
                                std::move(bev), {},
                                nullptr);
        return;
    }
    ControlConnection* link = &c;
    c.receive_fds(
        [this, server_name, id, peer, link, project](std::vector<UniqueFd> fds) {
            attach_fds(*link, server_name, id, peer, project, std::move(fds));
        },
        [this, id] { daemon_.sessions().end(id, "mcpctl connect went away", true); });
}

bool ControlCommands::admit(ControlConnection& c, ManagedServer& server, const std::string& cwd,
                            std::optional<Project>& project) {
    Placement::Admission admission = daemon_.placement().admit(
        server, cwd, c.peer(), daemon_.authority().trusted(c.peer()));
    if (!admission.refused_code.empty()) {
        c.reply_error(admission.refused_code, admission.refusal);
        return false;
    }
    project = std::move(admission.project);
    return true;
}

void ControlCommands::attach_fds(ControlConnection& link, const std::string& server_name,
                                 std::uint64_t session, const PeerCredentials& peer,
                                 const std::optional<Project>& project, std::vector<UniqueFd> fds) {
    ManagedServer* shared = daemon_.pool().find(server_name);
    if (shared == nullptr) {
        link.send(control::ended_message({"the server was removed", false}));
        link.close_after_flush();
        return;
    }
    BufferEvent input, output;
    if (!passed_ends(link, fds, input, output)) return;
    daemon_.sessions().open(daemon_.placement().place(*shared, session, project), session, peer,
                            std::move(input), std::move(output), &link);
}

bool ControlCommands::passed_ends(ControlConnection& link, std::vector<UniqueFd>& fds,
                                  BufferEvent& input, BufferEvent& output) {
    MCPD_CHECK(fds.size() == control::kPassedFds, "receive_fds returned another count");
    for (UniqueFd& fd : fds) {
        // Only pipes and sockets can be waited on; a file or a terminal cannot.
        if (!is_pipe_or_socket(fd.get())) {
            link.send(control::ended_message(
                {"mcpd can only use pipes or sockets for a session; use 'mcpctl connect --copy'",
                 false}));
            link.close_after_flush();
            return false;
        }
        evutil_make_socket_nonblocking(fd.get());
    }
    event_base* base = daemon_.loop().base();
    input = BufferEvent::over(base, std::move(fds[0]));
    output = BufferEvent::over(base, std::move(fds[1]));
    MCPD_CHECK(input != nullptr && output != nullptr,
               "libevent could not allocate a session's buffers");
    return true;
}

}  // namespace mcpd
