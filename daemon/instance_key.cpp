#include "daemon/instance_key.h"

#include "common/enum_names.h"

namespace mcpd {

namespace {

constexpr EnumName<InstanceKind> kInstanceKindNames[] = {
    {"shared", InstanceKind::shared},
    {"exclusive", InstanceKind::exclusive},
    {"project", InstanceKind::project},
    {"legacy", InstanceKind::legacy},
};

}  // namespace

std::string_view to_string(InstanceKind kind) {
    return name_of<InstanceKind>(kInstanceKindNames, kind);
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
