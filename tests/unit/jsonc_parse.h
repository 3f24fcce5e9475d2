// Agent JSON as mcpctl reads it, with comments and trailing commas: shared by the ctl tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ctl/jsonc_edit.h"

inline nlohmann::json parse(const std::string& text) {
    return nlohmann::json::parse(mcpctl::without_trailing_commas(text), nullptr, true, true);
}
