// Every running instance of every server, each kept under its InstanceKey (instance_key.h):
//   shared     one per registry entry, in registry order;
//   exclusive  one per session of a sharing = "exclusive" entry;
//   project    one per project (or per user) of a sharing = "project" ("user") entry, with
//              the Project it serves;
//   legacy     the legacy-era process of a dual-era entry's instance, with the project of the
//              child it belongs to, if any;
// and the retired ones: taken out of the table (removed by a reload, no longer needed), still
// going through the stop ladder, freed once drained. A project child that is retired counts
// against its user's max_children until it has drained.
//
// The pool only keeps instances: which one a session goes to, and when one is no longer
// needed, is decided by Placement (placement.h).
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/registry.h"
#include "daemon/instance_key.h"
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

    // Registry entries: their shared instances.
    ManagedServer& add(const config::ServerConfig& config);
    ManagedServer* find(const std::string& name);
    const ManagedServer* find(const std::string& name) const;
    // Retired instances included.
    ManagedServer* find_any(const std::string& name);
    // In registry order.
    std::vector<ManagedServer*> servers();
    std::vector<const ManagedServer*> servers() const;
    std::size_t size() const { return order_.size(); }
    void set_order(std::vector<std::string> order) { order_ = std::move(order); }
    // A changed registry entry, applied to its shared, project and legacy instances (a
    // private process keeps what it was started with).
    void apply_config(const config::ServerConfig& config);
    // Take a registry entry out: its shared instance and its children that hold no session
    // stop through the ladder (those with sessions go when their last session has).
    void remove(const std::string& name);

    // Any instance by its key.
    ManagedServer* find(const InstanceKey& key);
    // Changes whenever an instance is made, replaced, rekeyed or removed (see generation_).
    std::uint64_t generation() const { return generation_; }
    const ManagedServer* find(const InstanceKey& key) const;
    // The project an instance serves (project children and their legacy processes).
    const Project* project_of(const InstanceKey& key) const;
    // The key `instance` is kept under; null for a retired one, or one freed already (the
    // address is only compared).
    const InstanceKey* key_of(const ManagedServer* instance) const;
    // The instance under `key`, made (not started) with `config` and `project` when there is
    // none; `made` says whether it was.
    ManagedServer& make(const InstanceKey& key, const config::ServerConfig& config,
                        std::optional<Project> project, bool& made);
    // Take the instance under `key` out of the table; it stops through the ladder.
    void retire(const InstanceKey& key, StopReason reason);
    // The instance under `from` is kept under `to` from now on, serving `project`.
    void rekey(const InstanceKey& from, const InstanceKey& to, const Project& project);
    // The instances of `name` of one kind, in key order.
    std::vector<ManagedServer*> instances_of(const std::string& name, InstanceKind kind);
    std::vector<const ManagedServer*> instances_of(const std::string& name,
                                                   InstanceKind kind) const;
    // Every project child of `name`, with its project (for status).
    std::vector<std::pair<const Project*, const ManagedServer*>> projects_of(
        const std::string& name) const;

    // The project children of `name` as the placement rules see them (project_placement.h),
    // in key order, then those stopping (they count until reaped).
    std::vector<ChildView> child_views(const std::string& name) const;
    // Free the project children of `name` that run nothing, hold no session and drained.
    void prune_project_children(const std::string& name);
    // Children that hold no session now and run no process hold no slot.
    static bool project_child_live(const ManagedServer& child);

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
    // An upgrade in place: per entry, when it was added and what its freed instances counted;
    // and, in the new process, the same again.
    std::vector<CarriedPoolEntry> carried() const;
    void restore_carried(const std::vector<CarriedPoolEntry>& pool);
    // Free every instance (the daemon is going away).
    void clear();

private:
    struct Instance {
        std::unique_ptr<ManagedServer> server;
        std::optional<Project> project;
    };
    ServerHost& host_;
    std::function<void()> retired_freed_;
    std::map<InstanceKey, Instance> instances_;
    // Counts every change to instances_ (an instance made, replaced, rekeyed or gone): a
    // pointer to an instance taken at one generation is valid while it lasts.
    std::uint64_t generation_ = 0;
    std::vector<std::string> order_;  // registry order of the shared instances
    std::vector<std::unique_ptr<ManagedServer>> retired_;
    // Retired project children, by whose they were, until reaped (they count against
    // max_children).
    std::map<const ManagedServer*, uid_t> stopping_children_;
    std::map<std::string, TrafficStats> gone_stats_;
    std::map<std::string, TimePoint> added_;
    // An instance is about to be freed: what it counted stays with its server's name.
    void keep_stats(const ManagedServer& server);
};

}  // namespace mcpd
