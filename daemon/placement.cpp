// Placement: the route table, and the instances that exist for their sessions (placement.h).
// Admission is in placement_admission.cpp.
#include "daemon/placement.h"

#include "common/log.h"

namespace mcpd {

Placement::Placement(ServerPool& pool) : pool_(pool) {}

ManagedServer& Placement::place(ManagedServer& entry, SessionId id,
                                const std::optional<Project>& project) {
    const config::Sharing sharing = entry.config().sharing;
    if (project && sharing == config::Sharing::project) {
        // max_children was checked at the attach; a reload in between may have lowered it,
        // and the session is let in rather than dropped after its attach was accepted.
        working_projects_[id] = *project;
        const AttachChoice choice =
            place_session(pool_.child_views(entry.name()), project->key(), project->user);
        if (choice.kind == AttachChoice::Kind::lobby) {
            // child_views lists the server's children in key order, as instances_of does.
            const std::vector<ManagedServer*> children =
                pool_.instances_of(entry.name(), InstanceKind::project);
            if (choice.index < children.size()) {
                routes_[id] = Route{*pool_.key_of(children[choice.index]), std::nullopt};
                return *children[choice.index];
            }
        }
        return place_in_project(entry, id, *project);
    }
    if (project && sharing == config::Sharing::user) {
        // Its user's child, made if need be: nothing to settle later.
        return place_in_project(entry, id, *project);
    }
    if (sharing == config::Sharing::exclusive) {
        const InstanceKey key = InstanceKey::exclusive_of(entry.name(), id);
        bool made = false;
        ManagedServer& own = pool_.make(key, entry.config(), std::nullopt, made);
        routes_[id] = Route{key, std::nullopt};
        log::info(entry.name(), "starting a private process for session " + std::to_string(id) +
                                    " (sharing = \"exclusive\")");
        own.supervisor().request_start();
        return own;
    }
    routes_[id] = Route{InstanceKey::shared_of(entry.name()), std::nullopt};
    return entry;
}

ManagedServer& Placement::place_in_project(ManagedServer& entry, SessionId id,
                                           const Project& project) {
    pool_.prune_project_children(entry.name());
    const InstanceKey key = InstanceKey::project_of(entry.name(), project);
    bool made = false;
    ManagedServer& child = pool_.make(key, entry.config(), project, made);
    if (made) {
        log::info(entry.name(),
                  "starting a child for project " + project.directory + " (sharing = \"project\")");
    }
    routes_[id] = Route{key, std::nullopt};
    // Started (or started again after idling out) for the session; on demand, as shared.
    if (!child.supervisor().wanted_up()) child.supervisor().request_start();
    return child;
}

ManagedServer* Placement::server_of(SessionId id, const std::string& name) {
    const auto route = routes_.find(id);
    if (route != routes_.end()) {
        Route& r = route->second;
        if (r.instance != nullptr && r.generation == pool_.generation()) return r.instance;
        if (ManagedServer* instance = pool_.find(r.key)) {
            r.instance = instance;
            r.generation = pool_.generation();
            return instance;
        }
    }
    return pool_.find_any(name);
}

const InstanceKey* Placement::route_of(SessionId id) const {
    const auto route = routes_.find(id);
    return route == routes_.end() ? nullptr : &route->second.key;
}

const Project* Placement::project_of_session(SessionId id) const {
    const InstanceKey* key = route_of(id);
    return key != nullptr && key->kind == InstanceKind::project ? pool_.project_of(*key) : nullptr;
}

const Project* Placement::working_project_of(SessionId id) const {
    const auto it = working_projects_.find(id);
    return it == working_projects_.end() ? nullptr : &it->second;
}

void Placement::rekey_project_child(SessionId id, const Project& project) {
    const InstanceKey* route = route_of(id);
    if (route == nullptr || route->kind != InstanceKind::project) return;
    const InstanceKey from = *route;
    ManagedServer* child = pool_.find(from);
    if (child == nullptr) return;
    const InstanceKey to = InstanceKey::project_of(from.server, project);
    pool_.rekey(from, to, project);
    // Its legacy process, if it has one, serves the same child under its new key.
    const InstanceKey legacy_from = InstanceKey::legacy_of(from);
    const InstanceKey legacy_to = InstanceKey::legacy_of(to);
    pool_.rekey(legacy_from, legacy_to, project);
    for (auto& [session, r] : routes_) {
        if (r.key == from) r.key = to;
        if (r.key == legacy_from) r.key = legacy_to;
        if (r.modern == from) r.modern = to;
    }
    child->set_project_roots(project.roots);
}

void Placement::stop_idle_project_children(const std::string& name) {
    for (ManagedServer* child : pool_.instances_of(name, InstanceKind::project)) {
        if (child->router().session_count() > 0 ||
            child->supervisor().state() == ServerState::stopped)
            continue;
        const InstanceKey key = *pool_.key_of(child);
        log::info(name, "stopping the idle child of project " + pool_.project_of(key)->directory +
                            " to free its slot (max_children)");
        pool_.retire(key, StopReason::idle);
    }
}

void Placement::child_left(ManagedServer& child) {
    child.sessions_changed();
    if (child.router().session_count() > 0 || child.config().idle_timeout.count() > 0) return;
    const InstanceKey* key = pool_.key_of(&child);
    if (key == nullptr || key->kind != InstanceKind::project) return;
    const InstanceKey stopping = *key;
    log::info(child.name(), "the last session of project " + pool_.project_of(stopping)->directory +
                                " left: stopping its child");
    pool_.retire(stopping, StopReason::idle);
}

void Placement::child_left_if_present(const ManagedServer* child) {
    const InstanceKey* key = pool_.key_of(child);
    if (key == nullptr || key->kind != InstanceKind::project) return;
    if (ManagedServer* present = pool_.find(*key)) child_left(*present);
}

bool Placement::only_roots_differ(const ManagedServer& entry, const ManagedServer& child,
                                  const Project& project) const {
    config::ServerConfig next = config_for_project(entry.config(), project);
    next.roots = child.config().roots;
    return next == child.config();
}

ManagedServer& Placement::route_to_legacy(ManagedServer& modern, SessionId id) {
    const auto route = routes_.find(id);
    const InstanceKey modern_key =
        route != routes_.end() ? route->second.key : InstanceKey::shared_of(modern.name());
    const InstanceKey key = InstanceKey::legacy_of(modern_key);
    // Made from the registry's entry, and for a project child's clients from its project
    // (and user): the same program, in the legacy era.
    const ManagedServer* entry = pool_.find(modern.name());
    const Project* project = pool_.project_of(modern_key);
    std::optional<Project> served;
    if (entry != nullptr && project != nullptr) served = *project;
    bool made = false;
    ManagedServer& process =
        pool_.make(key, entry != nullptr ? entry->config() : modern.config(), served, made);
    if (made) {
        log::info(modern.name(),
                  "the server runs the stateless era: starting a second process, "
                  "initialized for its legacy clients");
    }
    routes_[id] = Route{key, modern_key};
    return process;  // started by the router when the initialize waits for it
}

bool Placement::on_legacy(SessionId id) const {
    const InstanceKey* key = route_of(id);
    return key != nullptr && key->kind == InstanceKind::legacy;
}

const ManagedServer* Placement::legacy_process(const std::string& name) const {
    return pool_.find(InstanceKey::legacy_of(InstanceKey::shared_of(name)));
}

std::size_t Placement::exclusive_count(const std::string& name) const {
    return pool_.instances_of(name, InstanceKind::exclusive).size();
}

const InstanceKey* Placement::modern_route_of(SessionId id) const {
    const auto route = routes_.find(id);
    return route == routes_.end() || !route->second.modern ? nullptr : &*route->second.modern;
}

void Placement::restore_route(SessionId id, const InstanceKey& key,
                              const std::optional<InstanceKey>& modern, std::optional<Project> working) {
    routes_[id] = Route{key, modern};
    if (working) working_projects_[id] = std::move(*working);
}

void Placement::session_left(SessionId id, const std::string& name) {
    working_projects_.erase(id);
    const auto found = routes_.find(id);
    if (found == routes_.end()) {
        if (ManagedServer* server = pool_.find_any(name)) {
            server->router().detach(id);
            server->sessions_changed();
        }
        return;
    }
    Route route = std::move(found->second);
    routes_.erase(found);
    if (route.key.kind == InstanceKind::legacy) {
        if (ManagedServer* process = pool_.find(route.key)) {
            process->router().detach(id);
            process->sessions_changed();
            if (process->router().session_count() == 0) {
                log::info(process->name(),
                          "the last legacy client left: stopping the legacy process");
                pool_.retire(route.key, StopReason::idle);
            }
        }
        if (!route.modern) return;
        route.key = *route.modern;  // and the instance it came through forgets it too
    }
    switch (route.key.kind) {
        case InstanceKind::exclusive:
            // A private process goes with its session, through the stop ladder.
            if (ManagedServer* own = pool_.find(route.key)) {
                own->router().detach(id);
                pool_.retire(route.key, StopReason::stopped);
            }
            return;
        case InstanceKind::project:
            if (ManagedServer* child = pool_.find(route.key)) {
                leave_project_child(id, *child);
                return;
            }
            break;
        case InstanceKind::shared:
        case InstanceKind::legacy:
            break;
    }
    // Its instance was retired (a reload removed the entry): it forgets the session there.
    pool_.for_each_instance([&](ManagedServer& instance) {
        if (instance.name() != name || !instance.router().has_session(id)) return;
        instance.router().detach(id);
        instance.sessions_changed();
    });
}

void Placement::leave_project_child(SessionId id, ManagedServer& child) {
    // A child it moved away from may still hold it, waiting for answers to its requests.
    std::vector<ManagedServer*> before;
    for (ManagedServer* other : pool_.instances_of(child.name(), InstanceKind::project)) {
        if (other != &child && other->router().departed(id)) before.push_back(other);
    }
    for (ManagedServer* other : before) {
        other->router().detach(id);
        child_left(*other);
    }
    child.router().detach(id);
    child_left(child);
}

void Placement::clear() {
    routes_.clear();
    working_projects_.clear();
}

}  // namespace mcpd
