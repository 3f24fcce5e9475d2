// Placement: whether a new session may be had (placement.h, "Admission").
#include <unistd.h>  // geteuid

#include <filesystem>

#include "common/accounts.h"
#include "common/control_protocol.h"
#include "daemon/peer_project.h"
#include "daemon/placement.h"

namespace mcpd {

std::optional<std::string> admission_refusal(const AdmissionView& view) {
    if (view.max_sessions > 0 && view.attached >= view.max_sessions) {
        return "server '" + view.server + "' already has " + std::to_string(view.max_sessions) +
               " sessions (max_sessions); try again later";
    }
    if (view.sharing == config::Sharing::exclusive && view.max_children > 0 &&
        view.attached >= view.max_children) {
        return "server '" + view.server + "' already runs " + std::to_string(view.max_children) +
               " private processes, one per session (max_children, sharing = \"exclusive\"); "
               "try again when a session has ended, or raise max_children in the registry";
    }
    return std::nullopt;
}

Placement::Admission Placement::admit(const ManagedServer& entry, const std::string& cwd,
                                      const PeerCredentials& peer, bool trusted) {
    const config::ServerConfig& config = entry.config();
    const bool exclusive = config.sharing == config::Sharing::exclusive;
    const AdmissionView view{entry.name(), config.sharing, config.max_sessions,
                             config.max_children,
                             exclusive ? exclusive_count(entry.name())
                                       : entry.router().session_count()};
    Admission admission;
    if (std::optional<std::string> refusal = admission_refusal(view)) {
        admission.refused_code = control::code::limit;
        admission.refusal = std::move(*refusal);
        return admission;
    }
    if (!config::children_per_user(config)) return admission;
    Result<Project> project = config.sharing == config::Sharing::user
                                  ? session_user_project(entry, peer)
                                  : session_project(entry, cwd, peer);
    if (!project) {
        admission.refused_code = control::code::bad_request;
        admission.refusal = project.error();
        return admission;
    }
    const ChildQuota quota = child_quota(config, peer, trusted);
    const std::vector<ChildView> children = pool_.child_views(entry.name());
    if (!child_available(children, project->key(), quota)) {
        // Idle children give their slots back as they stop: a retry then finds one.
        stop_idle_project_children(entry.name());
        admission.refused_code = control::code::limit;
        admission.refusal = child_refusal_sentence(
            entry.name(), quota, child_refusal(children, quota), project->directory);
        return admission;
    }
    admission.project = std::move(project).value();
    return admission;
}

Result<Project> Placement::session_user_project(const ManagedServer& entry,
                                                const PeerCredentials& peer) const {
    // The user's child runs in the entry's cwd, else in the user's home (its account's, or
    // `/` for a uid without one); checked as the user like a project's directory.
    std::string directory = entry.config().cwd;
    if (directory.empty()) {
        const std::optional<accounts::Account> account = accounts::account_of(peer.uid);
        directory = account && !account->home.empty() ? account->home : "/";
    }
    Result<Project> home = project_from_directory(directory);
    if (home) home = project_for_peer(home.value(), peer, ::geteuid());
    if (!home) {
        return permanent_failure("server '" + entry.name() +
                                 "' runs a child per user: " + home.error());
    }
    return home;
}

Result<Project> Placement::session_project(const ManagedServer& entry, const std::string& cwd,
                                           const PeerCredentials& peer) const {
    // mcpctl connect sends its directory; a client on the socket that does not is keyed by
    // the registry's cwd, else mcpd's own.
    std::string directory = cwd;
    const std::string& configured = entry.config().cwd;
    if (directory.empty() && !configured.empty() &&
        configured.find(config::kProjectPlaceholder) == std::string::npos) {
        directory = configured;
    }
    if (directory.empty()) {
        std::error_code error;
        const std::filesystem::path here = std::filesystem::current_path(error);
        directory = error ? std::string(1, '/') : here.string();
    }
    Result<Project> project = project_from_directory(directory);
    if (!project) {
        return permanent_failure("server '" + entry.name() +
                                 "' shares a child per project, and the attach's \"cwd\" gives "
                                 "none: " +
                                 project.error());
    }
    // The child runs there with `{project}` naming it: only a directory the peer may open.
    Result<Project> checked = project_for_peer(project.value(), peer, ::geteuid());
    if (!checked) {
        return permanent_failure("server '" + entry.name() +
                                 "' shares a child per project: " + checked.error());
    }
    return checked;
}

}  // namespace mcpd
