#include "daemon/server_pool.h"

#include <algorithm>

#include "common/log.h"

namespace mcpd {

namespace {

// The key of a legacy process: shared by the server's legacy clients, or private to one
// session of a sharing = "exclusive" server.
std::string legacy_key(const ManagedServer& server, SessionId session) {
    if (server.config().sharing != config::Sharing::exclusive) return server.name();
    std::string key = server.name();
    key += '#';
    key += std::to_string(session);
    return key;
}

// The key of a project's child: its server and its project.
std::string project_key(const std::string& name, const Project& project) {
    return name + '\n' + project.key();
}

}  // namespace

ServerPool::ServerPool(ServerHost& host, std::function<void()> retired_freed)
    : host_(host), retired_freed_(std::move(retired_freed)) {}

ServerPool::~ServerPool() {
    clear();
}

ManagedServer& ServerPool::add(const config::ServerConfig& config) {
    std::unique_ptr<ManagedServer>& slot = shared_[config.name];
    if (slot) keep_stats(*slot);
    slot = std::make_unique<ManagedServer>(host_, config);
    added_.try_emplace(config.name, Clock::now());
    if (std::find(order_.begin(), order_.end(), config.name) == order_.end())
        order_.push_back(config.name);
    return *slot;
}

ManagedServer* ServerPool::find(const std::string& name) {
    const auto it = shared_.find(name);
    return it == shared_.end() ? nullptr : it->second.get();
}

const ManagedServer* ServerPool::find(const std::string& name) const {
    const auto it = shared_.find(name);
    return it == shared_.end() ? nullptr : it->second.get();
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
    for (const std::string& name : order_) out.push_back(shared_.at(name).get());
    return out;
}

std::vector<const ManagedServer*> ServerPool::servers() const {
    std::vector<const ManagedServer*> out;
    out.reserve(order_.size());
    for (const std::string& name : order_) out.push_back(shared_.at(name).get());
    return out;
}

void ServerPool::apply_config(const config::ServerConfig& config) {
    if (ManagedServer* server = find(config.name)) server->apply_config(config);
    for (auto& [key, child] : projects_) {
        if (child.server->name() == config.name)
            child.server->apply_config(config_for_project(config, child.project));
    }
    for (auto& [key, legacy] : legacy_) {
        if (legacy->name() != config.name) continue;
        const auto project = legacy_projects_.find(key);
        legacy->apply_config(legacy_config(project == legacy_projects_.end()
                                               ? config
                                               : config_for_project(config, project->second)));
    }
}

void ServerPool::remove(const std::string& name) {
    auto node = shared_.extract(name);
    std::erase(order_, name);
    if (!node.empty()) retire(std::move(node.mapped()), StopReason::stopped);
    // Project children holding sessions go when their last session (being closed) leaves.
    for (auto it = projects_.begin(); it != projects_.end();) {
        ManagedServer* child = it->second.server.get();
        if (child->name() != name || child->router().session_count() > 0) {
            ++it;
            continue;
        }
        retire_project_child(std::move(it->second.server), it->second.project.user,
                             StopReason::stopped);
        it = projects_.erase(it);
    }
}

ManagedServer& ServerPool::instance_for_session(ManagedServer& server, SessionId id) {
    if (server.config().sharing != config::Sharing::exclusive) return server;
    auto instance = std::make_unique<ManagedServer>(host_, server.config());
    ManagedServer& ref = *instance;
    exclusive_[id] = std::move(instance);
    log::info(server.name(), "starting a private process for session " + std::to_string(id) +
                                 " (sharing = \"exclusive\")");
    ref.supervisor().request_start();
    return ref;
}

ManagedServer* ServerPool::exclusive_of(SessionId id) {
    const auto it = exclusive_.find(id);
    return it == exclusive_.end() ? nullptr : it->second.get();
}

std::size_t ServerPool::exclusive_count(const std::string& name) const {
    std::size_t n = 0;
    for (const auto& [id, server] : exclusive_) n += server->name() == name ? 1 : 0;
    return n;
}

bool ServerPool::end_exclusive(SessionId id) {
    auto instance = exclusive_.extract(id);
    if (instance.empty()) return false;
    instance.mapped()->router().detach(id);
    retire(std::move(instance.mapped()), StopReason::stopped);
    return true;
}

ManagedServer* ServerPool::server_of(SessionId id, const std::string& name) {
    if (ManagedServer* legacy = legacy_route(id)) return legacy;
    if (const auto it = project_routes_.find(id); it != project_routes_.end()) return it->second;
    if (ManagedServer* own = exclusive_of(id)) return own;
    return find_any(name);
}

config::ServerConfig ServerPool::legacy_config(const config::ServerConfig& server) {
    config::ServerConfig legacy = server;
    legacy.era = config::Era::legacy;
    legacy.autostart = false;  // started when a legacy client asks
    // A project child's legacy process serves that one project: its sessions were placed by
    // the modern child, and are not settled again.
    if (legacy.sharing == config::Sharing::project) legacy.sharing = config::Sharing::shared;
    return legacy;
}

ManagedServer& ServerPool::legacy_process_for(ManagedServer& server, SessionId session) {
    std::string key = legacy_key(server, session);
    const Project* project = nullptr;
    for (const auto& [child_key, child] : projects_) {
        if (child.server.get() != &server) continue;
        // A project's child: its legacy clients get a process of that project (and user).
        key = "project\n" + child_key;
        project = &child.project;
    }
    std::unique_ptr<ManagedServer>& slot = legacy_[key];
    if (!slot) {
        slot = std::make_unique<ManagedServer>(host_, legacy_config(server.config()));
        if (project != nullptr) legacy_projects_[key] = *project;
        log::info(server.name(),
                  "the server runs the stateless era: starting a second process, "
                  "initialized for its legacy clients");
    }
    return *slot;  // started by the router when the initialize waits for it
}

const ManagedServer* ServerPool::legacy_process(const std::string& name) const {
    const auto it = legacy_.find(name);
    return it == legacy_.end() ? nullptr : it->second.get();
}

ManagedServer* ServerPool::legacy_route(SessionId session) {
    const auto it = legacy_routes_.find(session);
    return it == legacy_routes_.end() ? nullptr : it->second;
}

void ServerPool::add_legacy_route(SessionId session, ManagedServer& process) {
    legacy_routes_[session] = &process;
}

void ServerPool::legacy_session_left(SessionId session) {
    auto route = legacy_routes_.extract(session);
    if (route.empty()) return;
    ManagedServer* process = route.mapped();
    process->router().detach(session);
    process->sessions_changed();
    if (process->router().session_count() > 0) return;
    for (auto it = legacy_.begin(); it != legacy_.end(); ++it) {
        if (it->second.get() != process) continue;
        std::unique_ptr<ManagedServer> owned = std::move(it->second);
        legacy_projects_.erase(it->first);
        legacy_.erase(it);
        log::info(owned->name(), "the last legacy client left: stopping the legacy process");
        retire(std::move(owned), StopReason::idle);
        return;
    }
}

std::vector<ManagedServer*> ServerPool::legacy_processes_of(const std::string& name) {
    std::vector<ManagedServer*> out;
    for (auto& [key, process] : legacy_) {
        if (process->name() == name) out.push_back(process.get());
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

bool ServerPool::project_child_available(const ManagedServer& server, const Project& project,
                                         const ChildQuota& quota) const {
    return child_available(child_views(server.name()), project.key(), quota);
}

void ServerPool::stop_idle_project_children(const std::string& name) {
    for (auto it = projects_.begin(); it != projects_.end();) {
        ManagedServer& child = *it->second.server;
        if (child.name() != name || child.router().session_count() > 0 ||
            child.supervisor().state() == ServerState::stopped) {
            ++it;
            continue;
        }
        log::info(name, "stopping the idle child of project " + it->second.project.directory +
                            " to free its slot (max_children)");
        retire_project_child(std::move(it->second.server), it->second.project.user,
                             StopReason::idle);
        it = projects_.erase(it);
    }
}

void ServerPool::retire_project_child(std::unique_ptr<ManagedServer> child, uid_t user,
                                      StopReason reason) {
    stopping_children_[child.get()] = user;
    retire(std::move(child), reason);
}

ManagedServer& ServerPool::project_child_for(ManagedServer& server, SessionId id,
                                             const Project& project) {
    prune_project_children(server.name());
    ProjectChild& child = projects_[project_key(server.name(), project)];
    if (!child.server) {
        child.project = project;
        child.server =
            std::make_unique<ManagedServer>(host_, config_for_project(server.config(), project));
        log::info(server.name(),
                  "starting a child for project " + project.directory + " (sharing = \"project\")");
    }
    project_routes_[id] = child.server.get();
    // Started (or started again after idling out) for the session; on demand, as shared.
    if (!child.server->supervisor().wanted_up()) child.server->supervisor().request_start();
    return *child.server;
}

std::size_t ServerPool::project_child_count(const std::string& name) const {
    std::size_t n = 0;
    for (const auto& [key, child] : projects_) {
        n += child.server->name() == name && project_child_live(*child.server) ? 1 : 0;
    }
    return n;
}

std::vector<std::pair<const Project*, const ManagedServer*>> ServerPool::projects_of(
    const std::string& name) const {
    std::vector<std::pair<const Project*, const ManagedServer*>> out;
    for (const auto& [key, child] : projects_) {
        if (child.server->name() == name) out.emplace_back(&child.project, child.server.get());
    }
    return out;
}

std::vector<ManagedServer*> ServerPool::project_children_of(const std::string& name) {
    std::vector<ManagedServer*> out;
    for (auto& [key, child] : projects_) {
        if (child.server->name() == name) out.push_back(child.server.get());
    }
    return out;
}

const Project* ServerPool::project_of_session(SessionId id) const {
    const auto route = project_routes_.find(id);
    if (route == project_routes_.end()) return nullptr;
    for (const auto& [key, child] : projects_) {
        if (child.server.get() == route->second) return &child.project;
    }
    return nullptr;
}

bool ServerPool::project_session_left(SessionId session) {
    working_projects_.erase(session);
    auto route = project_routes_.extract(session);
    if (route.empty()) return false;
    ManagedServer* child = route.mapped();
    // A child it moved away from may still hold it, waiting for answers to its requests.
    std::vector<ManagedServer*> before;
    for (auto& [key, other] : projects_) {
        if (other.server.get() != child && other.server->router().departed(session))
            before.push_back(other.server.get());
    }
    for (ManagedServer* other : before) {
        other->router().detach(session);
        project_child_left(*other);
    }
    child->router().detach(session);
    project_child_left(*child);
    return true;
}

void ServerPool::project_child_left(ManagedServer& child) {
    child.sessions_changed();
    if (child.router().session_count() > 0 || child.config().idle_timeout.count() > 0) return;
    for (auto it = projects_.begin(); it != projects_.end(); ++it) {
        if (it->second.server.get() != &child) continue;
        log::info(child.name(), "the last session of project " + it->second.project.directory +
                                    " left: stopping its child");
        retire_project_child(std::move(it->second.server), it->second.project.user,
                             StopReason::idle);
        projects_.erase(it);
        return;
    }
}

void ServerPool::project_child_left_if_present(const ManagedServer* child) {
    for (auto& [key, entry] : projects_) {
        if (entry.server.get() == child) {
            project_child_left(*entry.server);
            return;
        }
    }
}

std::vector<ChildView> ServerPool::child_views(const std::string& name) const {
    std::vector<ChildView> views;
    for (const auto& [key, child] : projects_) {
        const ManagedServer& server = *child.server;
        if (server.name() != name) continue;
        views.push_back({child.project.key(), project_child_live(server),
                         server.supervisor().state() == ServerState::running,
                         server.router().modern_child(), server.router().session_count(),
                         child.project.user});
    }
    // Children on their way out count until reaped (under no project: nothing joins them).
    for (const auto& server : retired_) {
        const auto stopping = stopping_children_.find(server.get());
        if (server->name() == name && stopping != stopping_children_.end() && !server->drained())
            views.push_back({std::string(), true, false, false, 0, stopping->second});
    }
    return views;
}

bool ServerPool::only_roots_differ(const ManagedServer& entry, const ManagedServer& child,
                                   const Project& project) const {
    config::ServerConfig next = config_for_project(entry.config(), project);
    next.roots = child.config().roots;
    return next == child.config();
}

void ServerPool::rekey_project_child(ManagedServer& child, const Project& project) {
    for (auto it = projects_.begin(); it != projects_.end(); ++it) {
        if (it->second.server.get() != &child) continue;
        ProjectChild rekeyed = std::move(it->second);
        projects_.erase(it);
        rekeyed.project = project;
        projects_.emplace(project_key(child.name(), project), std::move(rekeyed));
        child.set_project_roots(project.roots);
        return;
    }
}

ManagedServer& ServerPool::project_child_on_attach(ManagedServer& server, SessionId id,
                                                   const Project& working) {
    working_projects_[id] = working;
    const Placement placement =
        place_session(child_views(server.name()), working.key(), working.user);
    if (placement.kind == Placement::Kind::lobby) {
        // child_views lists the server's children in projects_ order.
        std::size_t index = 0;
        for (auto& [key, child] : projects_) {
            if (child.server->name() != server.name()) continue;
            if (index++ != placement.index) continue;
            project_routes_[id] = child.server.get();
            return *child.server;
        }
    }
    return project_child_for(server, id, working);
}

const Project* ServerPool::working_project_of(SessionId id) const {
    const auto it = working_projects_.find(id);
    return it == working_projects_.end() ? nullptr : &it->second;
}

ManagedServer* ServerPool::project_route(SessionId id) {
    const auto it = project_routes_.find(id);
    return it == project_routes_.end() ? nullptr : it->second;
}

void ServerPool::prune_project_children(const std::string& name) {
    for (auto it = projects_.begin(); it != projects_.end();) {
        const ManagedServer& child = *it->second.server;
        // A failed child that still holds sessions holds no slot, but stays theirs.
        if (child.name() == name && !project_child_live(child) &&
            child.router().session_count() == 0 && child.drained()) {
            keep_stats(child);
            it = projects_.erase(it);
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
    for (auto& [name, server] : shared_) visit(*server);
    for (auto& server : retired_) visit(*server);
    for (auto& [id, server] : exclusive_) visit(*server);
    for (auto& [key, server] : legacy_) visit(*server);
    for (auto& [key, child] : projects_) visit(*child.server);
}

void ServerPool::for_each_instance(
    const std::function<void(const ManagedServer&, const InstanceRole&)>& visit) const {
    for (const auto& [name, server] : shared_) visit(*server, {"shared"});
    for (const auto& server : retired_) visit(*server, {"retired"});
    for (const auto& [id, server] : exclusive_) visit(*server, {"exclusive"});
    for (const auto& [key, server] : legacy_) visit(*server, {"legacy"});
    for (const auto& [key, child] : projects_) visit(*child.server, {"project", &child.project});
}

void ServerPool::keep_stats(const ManagedServer& server) {
    gone_stats_[server.name()].absorb(server.router().stats());
}

const TrafficStats* ServerPool::gone_stats(const std::string& name) const {
    const auto it = gone_stats_.find(name);
    return it == gone_stats_.end() ? nullptr : &it->second;
}

TimePoint ServerPool::added_at(const std::string& name) const {
    const auto it = added_.find(name);
    return it == added_.end() ? TimePoint{} : it->second;
}

void ServerPool::clear() {
    // The routes point into legacy_: they go first.
    legacy_routes_.clear();
    legacy_.clear();
    legacy_projects_.clear();
    project_routes_.clear();
    working_projects_.clear();
    projects_.clear();
    exclusive_.clear();
    shared_.clear();
    retired_.clear();
    stopping_children_.clear();
    order_.clear();
}

}  // namespace mcpd
