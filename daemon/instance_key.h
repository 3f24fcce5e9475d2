// Which process of a registry entry an instance is. Every ManagedServer in the ServerPool is
// kept under one InstanceKey, and every session's route (Placement) names one, so that where a
// session goes is one lookup and the whole table is plain data.
#pragma once

#include <compare>
#include <string>
#include <string_view>

#include "daemon/mux/project.h"
#include "daemon/mux/session_sink.h"  // SessionId

namespace mcpd {

enum class InstanceKind {
    shared,     // the entry's own instance, every session of a shared or serialized server
    exclusive,  // the private process of one session (sharing = "exclusive")
    project,    // the child of one project, or of one user (sharing = "project", "user")
    legacy,     // the second process of a dual-era server, serving its legacy clients
};

std::string_view to_string(InstanceKind kind);

struct InstanceKey {
    std::string server;  // the registry entry
    InstanceKind kind = InstanceKind::shared;
    // exclusive: the session's id; project: the project's key (Project::key, which names its
    // user); legacy: empty for the entry's shared legacy process, else the kind and qualifier
    // of the instance whose legacy clients it serves.
    std::string qualifier;

    auto operator<=>(const InstanceKey&) const = default;

    static InstanceKey shared_of(const std::string& server);
    static InstanceKey exclusive_of(const std::string& server, SessionId session);
    static InstanceKey project_of(const std::string& server, const Project& project);
    // The legacy process that serves the legacy clients of `modern`.
    static InstanceKey legacy_of(const InstanceKey& modern);
};

}  // namespace mcpd
