// What upgrade_state.cpp and upgrade_state_clients.cpp share to read a state: the bounds of
// a descriptor number, and the readers of the clients' parts. Not for use elsewhere.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/json_fields.h"
#include "common/result.h"
#include "daemon/upgrade_state.h"

namespace mcpd::upgrade_parts {

inline constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
inline constexpr std::int64_t kIntMin = std::numeric_limits<int>::min();

// A descriptor mcpd could have kept across the exec: above stdio, within any table's size.
inline bool kept_descriptor(int fd) { return fd >= 3 && fd < (1 << 20); }
// A descriptor not named before in the state (-1: none); it is named now.
bool fresh_descriptor(int fd, std::vector<int>& taken);

// Why a carried server cannot be this instance next to `before` (the servers read so far).
std::string instance_problem(const CarriedServer& server, const std::vector<CarriedServer>& before);
nlohmann::json instance_json(const std::optional<CarriedInstance>& instance);
// null (the shared instance), or an exclusive or project instance; a problem noted in `in`.
std::optional<CarriedInstance> read_instance(const nlohmann::json& body, json_read::FieldReader& in);

nlohmann::json group_json(const CarriedGroup& group);
// null (no group session), or a group's kind, name, members and router; a problem noted in `in`.
std::optional<CarriedGroup> read_group(const nlohmann::json& body, json_read::FieldReader& in);

nlohmann::json followers_json(const std::vector<std::pair<int, std::string>>& followers);
// Version 2: the sessions and the `logs -f` connections, after the servers (`out.servers`),
// with descriptors none of `taken` is.
Result<Done> read_sessions(const nlohmann::json& body, UpgradeState& out, std::vector<int>& taken);
Result<Done> read_followers(const nlohmann::json& body, UpgradeState& out, std::vector<int>& taken);
// Version 3: what the pool keeps of each entry beyond its instances.
nlohmann::json pool_json(const std::vector<CarriedPoolEntry>& pool);
Result<Done> read_pool(const nlohmann::json& body, UpgradeState& out);
// Version 3: the HTTP front door's connections (after the sessions, whose exchanges name them).
Result<Done> read_http(const nlohmann::json& body, UpgradeState& out, std::vector<int>& taken);

}  // namespace mcpd::upgrade_parts
