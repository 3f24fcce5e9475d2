#include "ctl/known_servers.h"

namespace mcpctl {

namespace {

constexpr std::string_view kProjectScoped[] = {
    "@modelcontextprotocol/server-filesystem",
    "mcp-server-filesystem",
    "mcp-server-git",
    "@modelcontextprotocol/server-git",
};

// Servers that need their project (or nothing) and the network at most: the project preset
// reads the system and the project, writes the project and the package caches, hides the
// home's secrets.
constexpr std::string_view kProjectBoxed[] = {
    "@modelcontextprotocol/server-filesystem",
    "mcp-server-filesystem",
    "@modelcontextprotocol/server-git",
    "mcp-server-git",
    "@modelcontextprotocol/server-memory",
    "@modelcontextprotocol/server-sequential-thinking",
    "@modelcontextprotocol/server-everything",
    "mcp-server-time",
    "mcp-server-fetch",
};

}  // namespace

std::string_view known_package(const std::string& command, const std::vector<std::string>& args,
                               std::span<const std::string_view> names) {
    std::vector<std::string_view> words{command};
    for (const std::string& arg : args) words.emplace_back(arg);
    for (std::string_view word : words) {
        if (const std::size_t slash = word.rfind('/');
            slash != std::string_view::npos && !word.starts_with('@')) {
            word.remove_prefix(slash + 1);
        }
        if (const std::size_t at = word.find('@', 1); at != std::string_view::npos) {
            word = word.substr(0, at);
        }
        for (const std::string_view name : names) {
            if (word == name) return name;
        }
    }
    return {};
}

std::string_view project_scoped(const std::string& command, const std::vector<std::string>& args) {
    return known_package(command, args, kProjectScoped);
}

SandboxFit sandbox_fit(const std::string& command, const std::vector<std::string>& args) {
    if (known_package(command, args, kProjectBoxed).empty()) return {};
    return {"project",
            "it needs no more than its project and its package caches: boxed in them, the\n"
            "# home's secrets hidden (docs/SANDBOX.md); sandbox = \"none\" lifts the box"};
}

}  // namespace mcpctl
