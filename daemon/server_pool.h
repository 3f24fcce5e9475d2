// Every running instance of every server, and which one a session talks to.
//
// A registry entry can have several ManagedServers at once, each kept under an explicit key:
//   shared     by server name, in registry order: the instance every session of a
//              sharing = "shared" or "serialized" server uses;
//   exclusive  by session id: the private process of one session of a sharing = "exclusive"
//              server, started for it and stopped when it ends;
//   legacy     by legacy_key (the server's name, "name#session" for an exclusive one, or
//              "project" and the child's key for a project's): the second process of a
//              dual-era server run modern, serving its legacy clients, with the sessions it
//              holds in legacy routes;
//   project    by server name and project key (sharing = "project"): the child every session
//              of one project shares, started for the first and stopped after the last
//              (at once, or after idle_timeout), with the sessions it holds in project routes;
//   retired    no key: removed by a reload or no longer needed, still going through the stop
//              ladder, freed once drained.
// for_each_instance visits them all, for what shutdown does to every process.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/registry.h"
#include "daemon/managed_server.h"
#include "daemon/mux/project.h"
#include "daemon/mux/project_placement.h"

namespace mcpd {

class ServerPool {
public:
    // `retired_freed` runs after a drained retired instance was freed.
    ServerPool(ServerHost& host, std::function<void()> retired_freed);
    ~ServerPool();
    ServerPool(const ServerPool&) = delete;
    ServerPool& operator=(const ServerPool&) = delete;

    // Shared instances.
    ManagedServer& add(const config::ServerConfig& config);
    ManagedServer* find(const std::string& name);
    const ManagedServer* find(const std::string& name) const;
    // Retired instances included.
    ManagedServer* find_any(const std::string& name);
    // In registry order.
    std::vector<ManagedServer*> servers();
    std::vector<const ManagedServer*> servers() const;
    std::size_t size() const { return shared_.size(); }
    void set_order(std::vector<std::string> order) { order_ = std::move(order); }
    // A changed registry entry, applied to the server and to its legacy processes.
    void apply_config(const config::ServerConfig& config);
    // Take a shared instance out of the registry: it stops through the ladder.
    void remove(const std::string& name);

    // The process a new session `id` on `server` goes to: a private one, started now, for
    // sharing = "exclusive"; the shared one otherwise.
    ManagedServer& instance_for_session(ManagedServer& server, SessionId id);
    ManagedServer* exclusive_of(SessionId id);
    // How many private processes of `name` serve sessions now.
    std::size_t exclusive_count(const std::string& name) const;
    // Session `id` has ended: its private process, if it had one, detaches it and stops.
    bool end_exclusive(SessionId id);

    // The ManagedServer a session talks to: its legacy process, its private one, or the shared.
    ManagedServer* server_of(SessionId id, const std::string& name);

    // Legacy processes of dual-era servers (see daemon_legacy.cpp).
    static config::ServerConfig legacy_config(const config::ServerConfig& server);
    // The legacy process for `session` of `server`, made (not started) when there is none.
    ManagedServer& legacy_process_for(ManagedServer& server, SessionId session);
    // The one serving `name`'s legacy clients, if one is up or starting.
    const ManagedServer* legacy_process(const std::string& name) const;
    ManagedServer* legacy_route(SessionId session);
    void add_legacy_route(SessionId session, ManagedServer& process);
    // A session of a legacy process has left: the process stops when it was the last.
    void legacy_session_left(SessionId session);
    std::vector<ManagedServer*> legacy_processes_of(const std::string& name);

    // sharing = "project": whether session of `project` may use `server` now: its project
    // has a child, or `quota` lets a new one start (project_placement.h).
    bool project_child_available(const ManagedServer& server, const Project& project,
                                 const ChildQuota& quota) const;
    // Stop `name`'s children that hold no session (idling out), to free their slots.
    void stop_idle_project_children(const std::string& name);
    // The child of `project` for session `id` of `server`, made (and started) when the
    // project has none; the session is routed to it.
    ManagedServer& project_child_for(ManagedServer& server, SessionId id, const Project& project);
    // Where a new session of `server` starts, whose working directory is `working`: its
    // project's child when there is one; else, while its client may still report roots of
    // another project, any child of the server that runs (it answers the initialize; no
    // process is started for a guess); else a child for `working`, made now.
    ManagedServer& project_child_on_attach(ManagedServer& server, SessionId id,
                                           const Project& working);
    // The project of the directory session `id` attached from (what it is keyed by when its
    // client reports no roots).
    const Project* working_project_of(SessionId id) const;
    // The child session `id` is routed to; null for a session of another mode.
    ManagedServer* project_route(SessionId id);
    // A session moved off `child`: it stops (or idles out) when that was its last.
    void project_child_left(ManagedServer& child);
    // The same for a child known only by its address (it may have gone since).
    void project_child_left_if_present(const ManagedServer* child);
    // The children of `name` as the placement rules see them (project_placement.h).
    std::vector<ChildView> child_views(const std::string& name) const;
    // Whether `child` would run exactly as `project`'s child but for its roots.
    bool only_roots_differ(const ManagedServer& entry, const ManagedServer& child,
                           const Project& project) const;
    // `child` becomes `project`'s child in place: it takes the project's roots and is told
    // (Settlement::rekey).
    void rekey_project_child(ManagedServer& child, const Project& project);
    // Children of `name` that run or hold sessions now (what max_children bounds).
    std::size_t project_child_count(const std::string& name) const;
    // Every child of `name`, with its project, for status.
    std::vector<std::pair<const Project*, const ManagedServer*>> projects_of(
        const std::string& name) const;
    std::vector<ManagedServer*> project_children_of(const std::string& name);
    // The project of the child session `id` talks to; null for a session of another mode.
    const Project* project_of_session(SessionId id) const;
    // A session of a project child has left: with idle_timeout = 0 the child stops when it
    // was the last; otherwise the Supervisor idles it out and it is freed later. False when
    // the session was not a project child's.
    bool project_session_left(SessionId session);

    // Stop `server` through the ladder and keep it until it has drained.
    void retire(std::unique_ptr<ManagedServer> server, StopReason reason);
    // Bookkeeping for ServerHost::server_drained: a drained retired instance is freed on the
    // next turn.
    void drained(ManagedServer& server);

    // Which of its server's processes an instance is (the stats' breakdown per child).
    struct InstanceRole {
        std::string_view kind;             // shared, retired, exclusive, legacy or project
        const Project* project = nullptr;  // kind "project": the project it serves
    };
    // Every instance: shared, retired, exclusive, legacy, project children.
    void for_each_instance(const std::function<void(ManagedServer&)>& visit);
    void for_each_instance(
        const std::function<void(const ManagedServer&, const InstanceRole&)>& visit) const;
    // What the instances of `name` that were freed had counted (their routers' stats), and
    // when the server was first added.
    const TrafficStats* gone_stats(const std::string& name) const;
    TimePoint added_at(const std::string& name) const;
    // Free every instance (the daemon is going away).
    void clear();

private:
    ServerHost& host_;
    std::function<void()> retired_freed_;
    std::map<std::string, std::unique_ptr<ManagedServer>> shared_;
    std::vector<std::string> order_;  // registry order of shared_
    std::vector<std::unique_ptr<ManagedServer>> retired_;
    std::map<SessionId, std::unique_ptr<ManagedServer>> exclusive_;
    std::map<std::string, std::unique_ptr<ManagedServer>> legacy_;  // by legacy_key
    std::map<std::string, Project> legacy_projects_;  // the project of a project child's one
    std::map<SessionId, ManagedServer*> legacy_routes_;
    struct ProjectChild {
        Project project;
        std::unique_ptr<ManagedServer> server;
    };
    std::map<std::string, ProjectChild> projects_;  // by project_key
    std::map<SessionId, ManagedServer*> project_routes_;
    std::map<SessionId, Project> working_projects_;  // by session, from its attach
    // Free the children of `name` that have stopped, hold no session and have drained.
    void prune_project_children(const std::string& name);
    // An instance is about to be freed: what it counted stays with its server's name.
    void keep_stats(const ManagedServer& server);
    std::map<std::string, TrafficStats> gone_stats_;
    std::map<std::string, TimePoint> added_;
    // Children that hold no session now and run no process are not counted.
    static bool project_child_live(const ManagedServer& child);
    // Retire a project's child; it counts against max_children (as `user`'s) until reaped.
    void retire_project_child(std::unique_ptr<ManagedServer> child, uid_t user, StopReason reason);
    std::map<const ManagedServer*, uid_t> stopping_children_;
};

}  // namespace mcpd
