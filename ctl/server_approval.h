// Which of an agent's servers the user has turned on, as far as the agent's files say: adopt
// and import take only those, so that mcpd never starts a server the user declined.
//
//   Claude Code  a project's .mcp.json servers need approval: enableAllProjectMcpServers, or the
//                name in enabledMcpjsonServers, and not in disabledMcpjsonServers (in the
//                project's entry of ~/.claude.json, .claude/settings.local.json,
//                .claude/settings.json, ~/.claude/settings.json); a project's own servers in
//                ~/.claude.json are off when its disabledMcpServers lists them.
//   Gemini CLI   mcp.allowed / mcp.excluded (earlier allowMCPServers / excludeMCPServers).
//   any agent    an entry with "disabled": true (Cline, Roo Code, Windsurf).
// Claude Desktop, Cursor and VS Code keep no such switch in the files adopt reads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpctl {

class ServerApproval {
public:
    // Names that are off whatever else says, and why ("disabledMcpjsonServers in FILE").
    void exclude(std::vector<std::string> names, std::string why);
    // Only these names are on; the others are off, and why.
    void allow_only(std::vector<std::string> names, std::string why);
    void add(const ServerApproval& other);

    // Why the server `name` is off, or empty when it is on.
    std::string refusal(std::string_view name) const;

private:
    struct Rule {
        bool only = false;  // allow_only, else exclude
        std::vector<std::string> names;
        std::string why;
    };
    std::vector<Rule> rules_;
};

// The switches a file holds about its own servers (Gemini's lists).
ServerApproval file_approval(const nlohmann::json& doc);

// The switches of one project's entry in ~/.claude.json about its own servers.
ServerApproval claude_local_approval(const nlohmann::json& project, std::string_view dir);

// One file Claude Code reads approvals of .mcp.json servers from: its name and JSON text.
struct ApprovalSource {
    std::string path;
    std::string text;
    bool is_claude_json = false;  // ~/.claude.json: the keys are in projects[project_dir]
};

// Which servers of the .mcp.json in `project_dir` Claude Code has approved, from `sources`
// (files that are missing or not JSON are left out by the caller or here).
ServerApproval claude_project_approval(std::string_view project_dir,
                                       const std::vector<ApprovalSource>& sources);

// The same, reading ~/.claude.json ($HOME `home`), the project's .claude/settings.local.json
// and .claude/settings.json and ~/.claude/settings.json.
ServerApproval read_claude_project_approval(const std::string& project_dir,
                                            const std::string& home);

// Whether `path` is a Claude Code project file (named .mcp.json); its project is its directory.
bool is_claude_project_file(std::string_view path);

}  // namespace mcpctl
