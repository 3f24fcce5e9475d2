// Reading one [servers.<name>] table of the registry.
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <optional>
#include <span>
#include <string_view>

#include "config/registry.h"
#include "config/toml_reader.h"

namespace mcpd::config {

// Validate the server declared by `key` = `node`. Relative cwd and env_file paths are
// resolved against `base_dir` (the registry's directory). Every problem goes to `diag`;
// the result is nullopt only when `node` is not a table at all.
std::optional<ServerConfig> read_server(const toml::key& key, const toml::node& node,
                                        const std::filesystem::path& base_dir, Diagnostics& diag);

// Every key a server table takes, in documentation order.
std::span<const std::string_view> server_keys();

// Whether `name` is a valid server name: [A-Za-z0-9_.-]+.
bool is_server_name(std::string_view name);

}  // namespace mcpd::config
