// What an mcpctl command prints for a reply, found through the command table as mcpctl does.
#pragma once

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "ctl/command.h"

inline std::string render(std::string_view command, const nlohmann::json& result) {
    const mcpd::Result<const mcpctl::Command*> resolved = mcpctl::find_command(command);
    REQUIRE(resolved.ok());
    const mcpctl::Command* found = resolved.value();
    REQUIRE(found->render != nullptr);
    return found->render(result);
}
