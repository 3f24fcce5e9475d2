// The words the registry uses for each enum value, shared by parsing and to_string.
#pragma once

#include "config/registry.h"
#include "config/toml_reader.h"

namespace mcpd::config {

inline constexpr EnumName<RestartPolicy> kRestartPolicyNames[] = {
    {"always", RestartPolicy::always},
    {"on-failure", RestartPolicy::on_failure},
    {"never", RestartPolicy::never},
};

inline constexpr EnumName<Sharing> kSharingNames[] = {
    {"shared", Sharing::shared},
    {"exclusive", Sharing::exclusive},
    {"serialized", Sharing::serialized},
};

inline constexpr EnumName<Era> kEraNames[] = {
    {"auto", Era::auto_detect},
    {"legacy", Era::legacy},
    {"modern", Era::modern},
};

inline constexpr EnumName<LogLevel> kLogLevelNames[] = {
    {"debug", LogLevel::debug},
    {"info", LogLevel::info},
    {"warning", LogLevel::warning},
    {"error", LogLevel::error},
};

}  // namespace mcpd::config
