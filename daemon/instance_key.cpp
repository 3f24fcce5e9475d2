#include "daemon/instance_key.h"

namespace mcpd {

std::string_view to_string(InstanceKind kind) {
    switch (kind) {
        case InstanceKind::shared:
            return "shared";
        case InstanceKind::exclusive:
            return "exclusive";
        case InstanceKind::project:
            return "project";
        case InstanceKind::legacy:
            return "legacy";
    }
    return "shared";
}

InstanceKey InstanceKey::shared_of(const std::string& server) {
    return InstanceKey{server, InstanceKind::shared, {}};
}

InstanceKey InstanceKey::exclusive_of(const std::string& server, SessionId session) {
    return InstanceKey{server, InstanceKind::exclusive, std::to_string(session)};
}

InstanceKey InstanceKey::project_of(const std::string& server, const Project& project) {
    return InstanceKey{server, InstanceKind::project, project.key()};
}

InstanceKey InstanceKey::legacy_of(const InstanceKey& modern) {
    if (modern.kind == InstanceKind::shared) return InstanceKey{modern.server, InstanceKind::legacy, {}};
    std::string qualifier(to_string(modern.kind));
    qualifier += '\n';
    qualifier += modern.qualifier;
    return InstanceKey{modern.server, InstanceKind::legacy, std::move(qualifier)};
}

}  // namespace mcpd
