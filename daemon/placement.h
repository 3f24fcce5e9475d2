// Where every session goes, and whether it may: admission and placement in one place.
//
// - Admission (placement_admission.cpp): whether a new session of an entry may be had by its
//   peer now (max_sessions, max_children and each user's share of them, a project directory
//   the peer may open, a child per user), decided by admission_refusal and the rules of
//   mux/project_placement over a view of the pool, so that they are unit-tested.
// - Placement: the instance it goes to (the shared one, a private process, its project's or
//   user's child, a lobby child until its roots are known), kept in one route table by
//   session: SessionId → InstanceKey. Every line of a session is routed by one lookup there.
// - Moves: a project session moving to its project's child, and a legacy client handed to
//   the legacy process of its instance, re-point its route.
// - Leaving: a session's instance forgets it, and an instance that only existed for its
//   sessions (a private process, a legacy process, a project child without idle_timeout)
//   stops with its last one.
//
// The instances themselves are kept by the ServerPool; the Daemon handles the events that ask
// for a move (daemon_projects.cpp, daemon_legacy.cpp).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "daemon/control/peer_auth.h"
#include "daemon/instance_key.h"
#include "daemon/mux/project.h"
#include "daemon/server_pool.h"

namespace mcpd {

// What admission looks at of an entry besides the project rules (pure, unit-tested).
struct AdmissionView {
    std::string server;
    config::Sharing sharing = config::Sharing::shared;
    unsigned max_sessions = 0;  // 0: no limit
    unsigned max_children = 0;  // 0: no limit
    std::size_t attached = 0;   // sessions now (private processes under "exclusive")
};
// Why a new session may not attach now, as the sentence it is told; none when it may.
std::optional<std::string> admission_refusal(const AdmissionView& view);

class Placement {
public:
    explicit Placement(ServerPool& pool);
    Placement(const Placement&) = delete;
    Placement& operator=(const Placement&) = delete;

    ServerPool& pool() { return pool_; }

    // Whether `peer` may have a new session of `entry`, attached from `cwd`: the project it
    // gets (under sharing = "project" or "user"), or the refusal with its control error code.
    struct Admission {
        std::optional<Project> project;
        std::string_view refused_code;  // control::code; empty when admitted
        std::string refusal;
    };
    Admission admit(const ManagedServer& entry, const std::string& cwd,
                    const PeerCredentials& peer, bool trusted);

    // Route new session `id` of `entry`, admitted with `project`, and return its instance:
    // a private process started now (exclusive), its project's child (made when it has none,
    // or a lobby child while its roots may still name another), its user's child, or the
    // shared instance.
    ManagedServer& place(ManagedServer& entry, SessionId id, const std::optional<Project>& project);

    // The instance session `id` of `name` talks to: its route's, else the entry's (a shared
    // instance, retired ones included). Null when there is none.
    ManagedServer* server_of(SessionId id, const std::string& name);
    // The key of its route, when it has one.
    const InstanceKey* route_of(SessionId id) const;
    // sharing = "project": the project of the child it is on, and the project of the
    // directory it attached from (what it is keyed by when its client reports no roots).
    const Project* project_of_session(SessionId id) const;
    const Project* working_project_of(SessionId id) const;

    // sharing = "project": session `id` of `entry` goes to `project`'s child, made and started
    // when the project has none. Its previous child, if it was the last session there,
    // stops (child_left).
    ManagedServer& place_in_project(ManagedServer& entry, SessionId id, const Project& project);
    // The child session `id` is on serves `project` from now on (only the roots differed).
    void rekey_project_child(SessionId id, const Project& project);
    // Stop `name`'s project children that hold no session, to free their slots.
    void stop_idle_project_children(const std::string& name);
    // A session moved off `child`, or had its last request there answered: it stops (or idles
    // out) when that was its last session.
    void child_left(ManagedServer& child);
    void child_left_if_present(const ManagedServer* child);
    // Whether `child` would run exactly as `project`'s child of `entry` but for its roots.
    bool only_roots_differ(const ManagedServer& entry, const ManagedServer& child,
                           const Project& project) const;

    // A legacy client: session `id`, on `modern`, is routed to the legacy process of that
    // instance, made (not started) when there is none. Null when `id` has no route to `modern`
    // and `modern` is not its entry's shared instance.
    ManagedServer& route_to_legacy(ManagedServer& modern, SessionId id);
    // Whether session `id` is a legacy process's.
    bool on_legacy(SessionId id) const;
    // The legacy process serving `name`'s shared instance's legacy clients, if any.
    const ManagedServer* legacy_process(const std::string& name) const;

    // An upgrade in place: session `id` goes on on the instance under `key`, as it did, with
    // the project of the directory it attached from.
    void restore_route(SessionId id, const InstanceKey& key, const std::optional<InstanceKey>& modern,
                       std::optional<Project> working);
    // A legacy client's: the instance it came through; null for any other session.
    const InstanceKey* modern_route_of(SessionId id) const;

    // Session `id` of `name` has ended: its instance forgets it, and one that existed for it
    // (or for sessions like it) stops when it was the last.
    void session_left(SessionId id, const std::string& name);

    // How many private processes of `name` serve sessions now.
    std::size_t exclusive_count(const std::string& name) const;

    // The daemon is going away.
    void clear();

private:
    struct Route {
        InstanceKey key;
        // The instance a legacy client was handed over from (its modern one).
        std::optional<InstanceKey> modern;
        // The instance `key` named when the pool was at `generation`: every line of the
        // session finds it with one lookup here while the pool is unchanged. A new Route
        // starts without it; a changed pool makes it stale.
        ManagedServer* instance = nullptr;
        std::uint64_t generation = 0;
    };
    ServerPool& pool_;
    std::unordered_map<SessionId, Route> routes_;  // looked up per message; order unused
    std::map<SessionId, Project> working_projects_;  // by session, from its attach

    Result<Project> session_project(const ManagedServer& entry, const std::string& cwd,
                                    const PeerCredentials& peer) const;
    Result<Project> session_user_project(const ManagedServer& entry,
                                         const PeerCredentials& peer) const;
    // A project session leaving `child` (and any child it moved away from that still holds
    // it, waiting for answers).
    void leave_project_child(SessionId id, ManagedServer& child);
};

}  // namespace mcpd
