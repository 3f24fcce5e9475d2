// Reading a `sandbox` value of the registry: a preset's name or a table of rules.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <span>
#include <string_view>

#include "config/sandbox.h"
#include "config/toml_reader.h"

namespace mcpd::config {

// `sandbox = "project"` or `[servers.NAME.sandbox]` / `[daemon.sandbox]` (`where` names it in
// messages: "server 'x'" or "[daemon]"). Every problem goes to `diag`; nullopt when the value
// is neither a string nor a table.
std::optional<Sandbox> read_sandbox(const toml::node& value, std::string_view where,
                                    Diagnostics& diag);

// The keys a sandbox table takes, in documentation order.
std::span<const std::string_view> sandbox_keys();

}  // namespace mcpd::config
