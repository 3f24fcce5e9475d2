// Attaching a session to one server: admission (max_sessions, max_children, a project as its
// peer may have it, a child per user), the hand-over of the connection or of the passed
// descriptors, and the instance that serves it. Groups are in control_commands_group.cpp.
#include <event2/bufferevent.h>
#include <event2/util.h>
#include <sys/stat.h>
#include <unistd.h>  // geteuid

#include <filesystem>

#include "common/accounts.h"
#include "common/check.h"
#include "common/log.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"
#include "daemon/peer_project.h"

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
        daemon_.sessions().open(instance_for(server, id, project), id, peer, std::move(bev), {},
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
    const bool exclusive = server.config().sharing == config::Sharing::exclusive;
    const unsigned limit = server.config().max_sessions;
    const std::size_t attached =
        exclusive ? daemon_.pool().exclusive_count(server.name()) : server.router().session_count();
    if (limit > 0 && attached >= limit) {
        c.reply_error(control::code::limit, "server '" + server.name() + "' already has " +
                                                std::to_string(limit) +
                                                " sessions (max_sessions); try again later");
        return false;
    }
    const unsigned children = server.config().max_children;
    if (exclusive && children > 0 && attached >= children) {
        c.reply_error(control::code::limit,
                      "server '" + server.name() + "' already runs " + std::to_string(children) +
                          " private processes, one per session (max_children, sharing = "
                          "\"exclusive\"); try again when a session has ended, or raise "
                          "max_children in the registry");
        return false;
    }
    if (config::children_per_user(server.config())) {
        Result<Project> found_project = server.config().sharing == config::Sharing::user
                                            ? session_user_project(server, c.peer())
                                            : session_project(server, cwd, c.peer());
        if (!found_project) {
            c.reply_error(control::code::bad_request, found_project.error());
            return false;
        }
        const ChildQuota quota =
            child_quota(server.config(), c.peer(), daemon_.authority().trusted(c.peer()));
        if (!daemon_.pool().project_child_available(server, found_project.value(), quota)) {
            // Idle children give their slots back as they stop: a retry then finds one.
            daemon_.pool().stop_idle_project_children(server.name());
            c.reply_error(control::code::limit,
                          child_refusal_sentence(
                              server.name(), quota,
                              child_refusal(daemon_.pool().child_views(server.name()), quota),
                              found_project->directory));
            return false;
        }
        project = std::move(found_project).value();
    }
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
    daemon_.sessions().open(instance_for(*shared, session, project), session, peer,
                            std::move(input), std::move(output), &link);
}

bool ControlCommands::passed_ends(ControlConnection& link, std::vector<UniqueFd>& fds,
                                  BufferEvent& input, BufferEvent& output) {
    MCPD_CHECK(fds.size() == control::kPassedFds, "receive_fds returned another count");
    for (UniqueFd& fd : fds) {
        // Only pipes and sockets can be waited on; a file or a terminal cannot.
        struct stat st {};
        if (::fstat(fd.get(), &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
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

ManagedServer& ControlCommands::instance_for(ManagedServer& server, SessionId id,
                                             const std::optional<Project>& project) {
    if (project && server.config().sharing == config::Sharing::project) {
        // max_children was checked at the attach; a reload in between may have lowered it,
        // and the session is let in rather than dropped after its attach was accepted.
        return daemon_.pool().project_child_on_attach(server, id, *project);
    }
    if (project && server.config().sharing == config::Sharing::user) {
        // Its user's child, made if need be: nothing to settle later.
        return daemon_.pool().project_child_for(server, id, *project);
    }
    return daemon_.pool().instance_for_session(server, id);
}

Result<Project> ControlCommands::session_user_project(const ManagedServer& server,
                                                      const PeerCredentials& peer) const {
    // The user's child runs in the entry's cwd, else in the user's home (its account's, or
    // `/` for a uid without one); checked as the user like a project's directory.
    std::string directory = server.config().cwd;
    if (directory.empty()) {
        const std::optional<accounts::Account> account = accounts::account_of(peer.uid);
        directory = account && !account->home.empty() ? account->home : "/";
    }
    Result<Project> home = project_from_directory(directory);
    if (home) home = project_for_peer(home.value(), peer, ::geteuid());
    if (!home) {
        return permanent_failure("server '" + server.name() +
                                 "' runs a child per user: " + home.error());
    }
    return home;
}

Result<Project> ControlCommands::session_project(const ManagedServer& server,
                                                 const std::string& cwd,
                                                 const PeerCredentials& peer) const {
    // mcpctl connect sends its directory; a client on the socket that does not is keyed by
    // the registry's cwd, else mcpd's own.
    std::string directory = cwd;
    if (directory.empty() && !server.config().cwd.empty() &&
        server.config().cwd.find(config::kProjectPlaceholder) == std::string::npos) {
        directory = server.config().cwd;
    }
    if (directory.empty()) {
        std::error_code error;
        const std::filesystem::path here = std::filesystem::current_path(error);
        directory = error ? std::string(1, '/') : here.string();
    }
    Result<Project> project = project_from_directory(directory);
    if (!project) {
        return permanent_failure("server '" + server.name() +
                                 "' shares a child per project, and the attach's \"cwd\" gives "
                                 "none: " +
                                 project.error());
    }
    // The child runs there with `{project}` naming it: only a directory the peer may open.
    Result<Project> checked = project_for_peer(project.value(), peer, ::geteuid());
    if (!checked) {
        return permanent_failure("server '" + server.name() +
                                 "' shares a child per project: " + checked.error());
    }
    return checked;
}

}  // namespace mcpd
