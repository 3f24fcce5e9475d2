// Daemon: settling a session's project, for sharing = "project".
//
// A session starts on its working directory's child, or, while its client may still report
// roots of another project, on any running child of the server (which answers its
// initialize: every child runs the same program). Once it has initialized, its router asks
// the client for its roots and holds its lines; here the answer picks the project's child,
// and the session either stays or moves there before any of its lines reached a child. The
// children themselves are kept in the ServerPool (its project instances) and the sessions'
// routes to them by Placement.
#include <unistd.h>

#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/peer_project.h"

namespace mcpd {

void Daemon::project_reported(ManagedServer& server, SessionId session,
                              const nlohmann::json* roots_result, std::string_view why) {
    std::optional<Project> reported;
    std::string reason(why);
    if (roots_result != nullptr) {
        Result<Project> project = project_from_roots(*roots_result);
        if (project) {
            reported = std::move(project).value();
        } else {
            reason = project.error();
        }
    }
    // On the next turn: this runs inside the child's router, which a move changes.
    loop_.defer([this, session, name = server.name(), reported = std::move(reported),
                 reason = std::move(reason)] { settle_project(session, name, reported, reason); });
}

void Daemon::settle_project(SessionId session, const std::string& name,
                            const std::optional<Project>& reported, const std::string& why) {
    const InstanceKey* route = placement_.route_of(session);
    ManagedServer* current =
        route != nullptr && route->kind == InstanceKind::project ? pool_.find(*route) : nullptr;
    ManagedServer* entry = pool_.find(name);
    if (current == nullptr || entry == nullptr || !current->router().has_session(session)) return;
    const std::string who = "session " + std::to_string(session);
    Project target;
    if (reported) {
        // Its roots become the child's directory and `{project}`: only those its user may open.
        const std::optional<PeerCredentials> reporter = sessions_.peer_of(session);
        Result<Project> checked = reporter ? project_for_peer(*reported, *reporter, ::geteuid())
                                           : Result<Project>(permanent_failure("its peer is gone"));
        if (!checked) {
            const std::string message =
                "server '" + name + "' shares a child per project: " + checked.error();
            log::warning(name, who + " cannot be served: " + message);
            current->router().fail_held(session, message);
            sessions_.end(session, message, false);
            return;
        }
        target = std::move(checked).value();
    } else if (const Project* working = placement_.working_project_of(session)) {
        target = *working;
        log::info(name,
                  who + " is keyed by its working directory " + target.directory + ": " + why);
    } else {
        current->router().release_held(session);
        return;
    }
    const Project* here = placement_.project_of_session(session);
    const bool alone = current->router().session_count() == 1;
    const std::optional<PeerCredentials> peer = sessions_.peer_of(session);
    const ChildQuota quota = child_quota(entry->config(), peer.value_or(PeerCredentials{}),
                                         peer && authority_.trusted(*peer));
    const Settlement settlement = settle_session(
        pool_.child_views(name), here != nullptr ? here->key() : std::string(), target.key(), alone,
        here != nullptr && placement_.only_roots_differ(*entry, *current, target), quota);
    switch (settlement) {
        case Settlement::stay:
            current->router().release_held(session);
            return;
        case Settlement::rekey:
            // Nothing but the roots differ: the child takes the new ones and is told (it asks
            // roots/list again), without a restart.
            placement_.rekey_project_child(session, target);
            log::info(name, who + " changed its roots: its child now serves project " +
                                target.directory + " (notifications/roots/list_changed sent)");
            current->router().release_held(session);
            return;
        case Settlement::refuse: {
            const ChildRefusal refusal = child_refusal(pool_.child_views(name), quota);
            placement_.stop_idle_project_children(name);  // their slots come back as they stop
            const std::string message =
                child_refusal_sentence(name, quota, refusal, target.directory);
            log::warning(name, who + " cannot be served: " + message);
            current->router().fail_held(session, message);
            sessions_.end(session, message, false);
            return;
        }
        case Settlement::join:
        case Settlement::start:
            break;
    }
    ManagedServer& next = placement_.place_in_project(*entry, session, target);
    std::optional<Router::MovedSession> moved = current->router().release_session(session);
    placement_.child_left(*current);
    if (moved) next.router().adopt_session(std::move(*moved));
    next.sessions_changed();
    log::info(name, who + " is served by the child of project " + target.directory);
}

void Daemon::departed_session_gone(ManagedServer& server) {
    // On the next turn: this runs inside the child's router.
    const ManagedServer* child = &server;
    loop_.defer([this, child] { placement_.child_left_if_present(child); });
}

void Daemon::cancel_elsewhere(ManagedServer& server, SessionId session, std::string_view line) {
    for (ManagedServer* child : pool_.instances_of(server.name(), InstanceKind::project)) {
        if (child != &server && child->router().departed(session))
            child->router().cancel_for_departed(session, line);
    }
}

}  // namespace mcpd
