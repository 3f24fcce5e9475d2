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
    {"project", Sharing::project},
    {"user", Sharing::user},
};

inline constexpr EnumName<Era> kEraNames[] = {
    {"auto", Era::auto_detect},
    {"legacy", Era::legacy},
    {"modern", Era::modern},
};

inline constexpr EnumName<Replay> kReplayNames[] = {
    {"off", Replay::off},
    {"safe", Replay::safe},
    {"annotated", Replay::annotated},
};

inline constexpr EnumName<NetworkAccess> kNetworkNames[] = {
    {"all", NetworkAccess::all},
    {"loopback", NetworkAccess::loopback},
    {"none", NetworkAccess::none},
};

// The log level's words are the daemon log's own: log::kLevelNames (common/log.h).

}  // namespace mcpd::config
