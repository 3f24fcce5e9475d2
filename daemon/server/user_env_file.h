// An `env_file` of the form "~/PATH": the file in the home of the user a child runs as, read
// when the child starts and with that user's rights, so that each user's child gets that
// user's own credentials and no user can make mcpd read a file the user could not.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/result.h"
#include "config/registry.h"

namespace mcpd {

// Whether `env_file` names a file in the home of the user a child runs as.
bool is_user_env_file(const std::string& env_file);

// The variables of `env_file` ("~/PATH") for a child that runs as `identity` (none: mcpd's own
// user, whose HOME is `own_home`). A missing or malformed file is a sentence naming the file
// and the line, never a value.
Result<std::map<std::string, std::string>> read_user_env_file(
    const std::string& env_file, const std::optional<config::ChildIdentity>& identity,
    const std::string& own_home);

}  // namespace mcpd
