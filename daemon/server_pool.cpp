#include "daemon/server_pool.h"

#include <algorithm>

#include "common/log.h"
#include "daemon/mux/replay_policy.h"

namespace mcpd {

namespace {

// What a legacy process of an entry runs: the entry in the legacy era, started when a legacy
// client asks; a project child's serves that one project (its sessions were placed by the
// modern child, and are not settled again).
config::ServerConfig legacy_config_of(const config::ServerConfig& server) {
    config::ServerConfig legacy = server;
    legacy.era = config::Era::legacy;
    legacy.autostart = false;
    legacy.lazy = false;  // started for the legacy client that asks, and kept while it stays
    if (legacy.sharing == config::Sharing::project) legacy.sharing = config::Sharing::shared;
    return legacy;
}

}  // namespace

ServerPool::ServerPool(ServerHost& host, std::function<void()> retired_freed)
    : host_(host), retired_freed_(std::move(retired_freed)) {}

ServerPool::~ServerPool() {
    clear();
}

ManagedServer& ServerPool::add(const config::ServerConfig& config) {
    Instance& slot = instances_[InstanceKey::shared_of(config.name)];
    ++generation_;
    if (slot.server) keep_stats(*slot.server);
    slot.server = std::make_unique<ManagedServer>(host_, config);
    added_.try_emplace(config.name, Clock::now());
    if (std::find(order_.begin(), order_.end(), config.name) == order_.end())
        order_.push_back(config.name);
    return *slot.server;
}

ManagedServer* ServerPool::find(const std::string& name) {
    return find(InstanceKey::shared_of(name));
}

const ManagedServer* ServerPool::find(const std::string& name) const {
    return find(InstanceKey::shared_of(name));
}

ManagedServer* ServerPool::find_any(const std::string& name) {
    if (ManagedServer* server = find(name)) return server;
    for (auto& server : retired_) {
        if (server->name() == name) return server.get();
    }
    return nullptr;
}

std::vector<ManagedServer*> ServerPool::servers() {
    std::vector<ManagedServer*> out;
    out.reserve(order_.size());
    for (const std::string& name : order_) out.push_back(find(name));
    return out;
}

std::vector<const ManagedServer*> ServerPool::servers() const {
    std::vector<const ManagedServer*> out;
    out.reserve(order_.size());
    for (const std::string& name : order_) out.push_back(find(name));
    return out;
}

void ServerPool::apply_config(const config::ServerConfig& config) {
    for (auto& [key, instance] : instances_) {
        if (key.server != config.name || key.kind == InstanceKind::exclusive) continue;
        const config::ServerConfig own =
            instance.project ? config_for_project(config, *instance.project) : config;
        instance.server->apply_config(key.kind == InstanceKind::legacy ? legacy_config_of(own)
                                                                        : own);
    }
}

void ServerPool::remove(const std::string& name) {
    std::erase(order_, name);
    retire(InstanceKey::shared_of(name), StopReason::stopped);
    // Project children holding sessions go when their last session (being closed) leaves.
    for (ManagedServer* child : instances_of(name, InstanceKind::project)) {
        if (child->router().session_count() > 0) continue;
        if (const InstanceKey* key = key_of(child)) retire(InstanceKey(*key), StopReason::stopped);
    }
}

ManagedServer* ServerPool::find(const InstanceKey& key) {
    const auto it = instances_.find(key);
    return it == instances_.end() ? nullptr : it->second.server.get();
}

const ManagedServer* ServerPool::find(const InstanceKey& key) const {
    const auto it = instances_.find(key);
    return it == instances_.end() ? nullptr : it->second.server.get();
}

const Project* ServerPool::project_of(const InstanceKey& key) const {
    const auto it = instances_.find(key);
    return it == instances_.end() || !it->second.project ? nullptr : &*it->second.project;
}

const InstanceKey* ServerPool::key_of(const ManagedServer* instance) const {
    for (const auto& [key, held] : instances_) {
        if (held.server.get() == instance) return &key;
    }
    return nullptr;
}

ManagedServer& ServerPool::make(const InstanceKey& key, const config::ServerConfig& config,
                                std::optional<Project> project, bool& made) {
    Instance& slot = instances_[key];
    made = !slot.server;
    if (made) {
        ++generation_;
        const config::ServerConfig own = project ? config_for_project(config, *project) : config;
        std::optional<uid_t> user;
        if (project) user = project->user;
        slot.server = std::make_unique<ManagedServer>(
            host_, key.kind == InstanceKind::legacy ? legacy_config_of(own) : own, user);
        slot.project = std::move(project);
    }
    return *slot.server;
}

void ServerPool::retire(const InstanceKey& key, StopReason reason) {
    auto node = instances_.extract(key);
    if (node.empty()) return;
    ++generation_;
    Instance& instance = node.mapped();
    // A project's child counts against max_children (as its user's) until it is reaped.
    if (key.kind == InstanceKind::project && instance.project)
        stopping_children_[instance.server.get()] = instance.project->user;
    retire(std::move(instance.server), reason);
}

void ServerPool::rekey(const InstanceKey& from, const InstanceKey& to, const Project& project) {
    auto node = instances_.extract(from);
    if (node.empty()) return;
    ++generation_;
    node.key() = to;
    node.mapped().project = project;
    instances_.insert(std::move(node));
}

std::vector<ManagedServer*> ServerPool::instances_of(const std::string& name, InstanceKind kind) {
    std::vector<ManagedServer*> out;
    for (auto& [key, instance] : instances_) {
        if (key.server == name && key.kind == kind) out.push_back(instance.server.get());
    }
    return out;
}

std::vector<const ManagedServer*> ServerPool::instances_of(const std::string& name,
                                                           InstanceKind kind) const {
    std::vector<const ManagedServer*> out;
    for (const auto& [key, instance] : instances_) {
        if (key.server == name && key.kind == kind) out.push_back(instance.server.get());
    }
    return out;
}

std::vector<std::pair<const Project*, const ManagedServer*>> ServerPool::projects_of(
    const std::string& name) const {
    std::vector<std::pair<const Project*, const ManagedServer*>> out;
    for (const auto& [key, instance] : instances_) {
        if (key.server == name && key.kind == InstanceKind::project)
            out.emplace_back(&*instance.project, instance.server.get());
    }
    return out;
}

bool ServerPool::project_child_live(const ManagedServer& child) {
    // A process counts until it is reaped, and one waiting to restart for its sessions; a
    // child that failed, or stopped with no session, holds no slot.
    const ServerState state = child.supervisor().state();
    const bool has_process = !child.drained() || state == ServerState::starting ||
                             state == ServerState::running || state == ServerState::stopping ||
                             state == ServerState::backoff;
    return has_process || (child.router().session_count() > 0 && state != ServerState::failed);
}

std::vector<ChildView> ServerPool::child_views(const std::string& name) const {
    std::vector<ChildView> views;
    for (const auto& [key, instance] : instances_) {
        if (key.server != name || key.kind != InstanceKind::project) continue;
        const ManagedServer& server = *instance.server;
        views.push_back({key.qualifier, project_child_live(server),
                         server.supervisor().state() == ServerState::running,
                         server.router().modern_child(), server.router().session_count(),
                         instance.project->user});
    }
    // Children on their way out count until reaped (under no project: nothing joins them).
    for (const auto& server : retired_) {
        const auto stopping = stopping_children_.find(server.get());
        if (server->name() == name && stopping != stopping_children_.end() && !server->drained())
            views.push_back({std::string(), true, false, false, 0, stopping->second});
    }
    return views;
}

void ServerPool::prune_project_children(const std::string& name) {
    for (auto it = instances_.begin(); it != instances_.end();) {
        const ManagedServer& child = *it->second.server;
        // A failed child that still holds sessions holds no slot, but stays theirs.
        if (it->first.server == name && it->first.kind == InstanceKind::project &&
            !project_child_live(child) && child.router().session_count() == 0 &&
            child.drained()) {
            keep_stats(child);
            ++generation_;
            it = instances_.erase(it);
        } else {
            ++it;
        }
    }
}

void ServerPool::retire(std::unique_ptr<ManagedServer> server, StopReason reason) {
    ManagedServer* raw = server.get();
    retired_.push_back(std::move(server));
    raw->supervisor().request_stop(reason);
    if (raw->drained()) host_.server_drained(*raw);
}

void ServerPool::drained(ManagedServer& server) {
    const auto it = std::find_if(retired_.begin(), retired_.end(),
                                 [&server](const auto& s) { return s.get() == &server; });
    if (it == retired_.end() || server.supervisor().state() == ServerState::stopping) return;
    // Not from inside the server's own callbacks: on the next turn.
    ManagedServer* key = &server;
    host_.loop().defer([this, key] {
        const auto found = std::find_if(retired_.begin(), retired_.end(),
                                        [key](const auto& s) { return s.get() == key; });
        if (found != retired_.end() && (*found)->drained()) {
            keep_stats(**found);
            stopping_children_.erase(found->get());
            retired_.erase(found);
        }
        retired_freed_();
    });
}

void ServerPool::for_each_instance(const std::function<void(ManagedServer&)>& visit) {
    for (auto& [key, instance] : instances_) visit(*instance.server);
    for (auto& server : retired_) visit(*server);
}

void ServerPool::for_each_instance(
    const std::function<void(const ManagedServer&, const InstanceRole&)>& visit) const {
    // Shared first and retired next, then the others by kind, as status and stats list them.
    for (const std::string& name : order_) {
        if (const ManagedServer* server = find(name)) visit(*server, {"shared"});
    }
    for (const auto& server : retired_) visit(*server, {"retired"});
    for (const InstanceKind kind :
         {InstanceKind::exclusive, InstanceKind::legacy, InstanceKind::project}) {
        for (const auto& [key, instance] : instances_) {
            if (key.kind != kind) continue;
            visit(*instance.server,
                  {to_string(kind), instance.project && kind == InstanceKind::project
                                        ? &*instance.project
                                        : nullptr});
        }
    }
}

void ServerPool::keep_stats(const ManagedServer& server) {
    gone_stats_[server.name()].absorb(server.router().stats());
}

const TrafficStats* ServerPool::gone_stats(const std::string& name) const {
    const auto it = gone_stats_.find(name);
    return it == gone_stats_.end() ? nullptr : &it->second;
}

std::vector<CarriedPoolEntry> ServerPool::carried() const {
    std::vector<CarriedPoolEntry> out;
    const TimePoint now = Clock::now();
    for (const auto& [name, added] : added_) {
        CarriedPoolEntry e;
        e.name = name;
        e.added_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - added).count();
        if (const auto gone = gone_stats_.find(name); gone != gone_stats_.end()) {
            CarriedStats stats;
            for (const auto& [tool, counters] : gone->second.tools()) stats.tools[tool] = counters;
            for (const auto& [method, counters] : gone->second.methods()) stats.methods[method] = counters;
            stats.sessions_total = gone->second.sessions_total();
            stats.replay_counts.assign(std::size(kReplayVerdicts), 0);  // a freed one's are not kept
            e.gone = std::move(stats);
        }
        out.push_back(std::move(e));
    }
    return out;
}

void ServerPool::restore_carried(const std::vector<CarriedPoolEntry>& pool) {
    const TimePoint now = Clock::now();
    for (const CarriedPoolEntry& e : pool) {
        added_[e.name] = now - std::chrono::milliseconds(std::max<std::int64_t>(e.added_ms, 0));
        if (!e.gone) continue;
        TrafficStats& stats = gone_stats_[e.name];
        for (const auto& [tool, counters] : e.gone->tools) stats.restore_name(true, tool, counters);
        for (const auto& [method, counters] : e.gone->methods) stats.restore_name(false, method, counters);
        stats.restore_sessions_total(e.gone->sessions_total);
    }
}

TimePoint ServerPool::added_at(const std::string& name) const {
    const auto it = added_.find(name);
    return it == added_.end() ? TimePoint{} : it->second;
}

void ServerPool::clear() {
    ++generation_;
    // Legacy processes first, as before the others: nothing routes to them once the
    // placement's table is gone, and their sessions' routers go with them.
    for (auto it = instances_.begin(); it != instances_.end();) {
        it = it->first.kind == InstanceKind::legacy ? instances_.erase(it) : std::next(it);
    }
    instances_.clear();
    retired_.clear();
    stopping_children_.clear();
    order_.clear();
}

}  // namespace mcpd
