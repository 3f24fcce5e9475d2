// Adding tables to the registry from mcpctl (import --write, adopt): reading it, appending to
// it, and asking mcpd to reload it afterwards.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mcpctl {

struct Context;

// The whole file as bytes; the failure completes "FILE ...".
mcpd::Result<std::string> read_text_file(const std::string& path);

// The registry's text, empty when there is no file yet; the failure names the file.
mcpd::Result<std::string> read_registry(const std::string& path);

// Append `toml` to the registry at `path`, whose text is `existing`, with a blank line between
// them; the file and its directories are created when missing.
mcpd::Result<mcpd::Done> append_to_registry(const std::string& path, std::string_view existing,
                                            std::string_view toml);

// After writing the registry (`wrote`: "wrote 2 servers to PATH"): ask mcpd to reload it and say
// how that went, in text or in `report` ("reload", "error") in JSON mode. mcpd not running is
// not a failure: it reads the registry when it starts. Returns the exit code.
int reload_after_write(const Context& ctx, const std::string& wrote, nlohmann::json& report);

}  // namespace mcpctl
