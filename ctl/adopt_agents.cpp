#include "ctl/adopt_agents.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace mcpctl {

namespace {

namespace fs = std::filesystem;

// An agent and where it keeps its servers: relative to $HOME and to the current directory.
struct AgentSpec {
    std::string_view name;
    std::string_view user_file;
    std::vector<std::string_view> project_files;  // a name ending in '/' is a directory of files
};

const AgentSpec kAgents[] = {
    {"claude-code", ".claude.json", {".mcp.json"}},
    {"claude-desktop", ".config/Claude/claude_desktop_config.json", {}},
    {"cursor", ".cursor/mcp.json", {".cursor/mcp.json"}},
    {"vscode", ".config/Code/User/mcp.json", {".vscode/mcp.json"}},
    {"gemini", ".gemini/settings.json", {}},
    // Codex: $CODEX_HOME/config.toml (agent_files), and a trusted project's .codex/config.toml.
    {"codex", ".codex/config.toml", {".codex/config.toml"}},
    {"zed", ".config/zed/settings.json", {".zed/settings.json"}},
    {"opencode", ".config/opencode/opencode.json", {"opencode.json", "opencode.jsonc"}},
    {"windsurf", ".codeium/windsurf/mcp_config.json", {}},
    {"kiro", ".kiro/settings/mcp.json", {".kiro/settings/mcp.json"}},
    {"goose", ".config/goose/config.yaml", {}},
    {"continue", ".continue/config.yaml", {".continue/mcpServers/"}},
    {"lmstudio", ".lmstudio/mcp.json", {}},
};
constexpr std::string_view kAgentNames[] = {
    "claude-code", "claude-desktop", "cursor", "vscode", "gemini",   "codex",   "zed",
    "opencode",    "windsurf",       "kiro",   "goose",  "continue", "lmstudio"};

// The YAML and JSON files in `dir`, sorted; none when it is missing.
std::vector<std::string> config_files_in(const fs::path& dir) {
    std::vector<std::string> files;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!name.starts_with('.') &&
            (format_of(name) == AdoptFormat::yaml || it->path().extension() == ".json"))
            files.push_back(it->path().lexically_normal().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace

std::span<const std::string_view> known_agents() {
    return kAgentNames;
}

mcpd::Result<std::vector<std::string>> agent_files(std::string_view agent, std::string_view home,
                                                   std::string_view cwd,
                                                   std::string_view codex_home) {
    const auto spec = std::find_if(std::begin(kAgents), std::end(kAgents),
                                   [&](const AgentSpec& s) { return s.name == agent; });
    if (spec == std::end(kAgents)) {
        std::string known;
        for (const std::string_view name : kAgentNames) {
            if (!known.empty()) known += ", ";
            known += name;
        }
        std::string sentence = "unknown agent '";
        sentence += agent;
        sentence += "'; the known agents are " + known + " (or give the path of a file)";
        return mcpd::permanent_failure(std::move(sentence));
    }
    std::vector<std::string> files;
    const auto add = [&](const std::string& file) {
        if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
    };
    if (spec->name == "codex" && !codex_home.empty())
        add((fs::path(codex_home) / "config.toml").lexically_normal().string());
    else
        add((fs::path(home) / spec->user_file).lexically_normal().string());
    for (const std::string_view relative : spec->project_files) {
        const fs::path path = (fs::path(cwd) / relative).lexically_normal();
        if (!relative.ends_with('/')) {
            add(path.string());
            continue;
        }
        for (const std::string& file : config_files_in(path)) add(file);
    }
    return files;
}

AdoptFormat format_of(std::string_view path) {
    const std::string extension = fs::path(path).extension().string();
    if (extension == ".toml") return AdoptFormat::toml;
    if (extension == ".yaml" || extension == ".yml") return AdoptFormat::yaml;
    return AdoptFormat::json;
}

}  // namespace mcpctl
