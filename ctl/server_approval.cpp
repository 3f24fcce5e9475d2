#include "ctl/server_approval.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "config/text_file.h"

namespace mcpctl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool listed(const std::vector<std::string>& names, std::string_view name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// The strings of doc[key] when it is an array; nullopt when there is no such array.
std::optional<std::vector<std::string>> string_list(const json& doc, const char* key) {
    if (!doc.is_object() || !doc.contains(key) || !doc[key].is_array()) return std::nullopt;
    std::vector<std::string> names;
    for (const json& item : doc[key])
        if (item.is_string()) names.push_back(item.get<std::string>());
    return names;
}

}  // namespace

void ServerApproval::exclude(std::vector<std::string> names, std::string why) {
    if (!names.empty()) rules_.push_back({false, std::move(names), std::move(why)});
}

void ServerApproval::allow_only(std::vector<std::string> names, std::string why) {
    rules_.push_back({true, std::move(names), std::move(why)});
}

void ServerApproval::add(const ServerApproval& other) {
    rules_.insert(rules_.end(), other.rules_.begin(), other.rules_.end());
}

std::string ServerApproval::refusal(std::string_view name) const {
    // An exclusion says more than a missing approval: it is reported first.
    for (const Rule& rule : rules_)
        if (!rule.only && listed(rule.names, name)) return rule.why;
    for (const Rule& rule : rules_)
        if (rule.only && !listed(rule.names, name)) return rule.why;
    return {};
}

ServerApproval file_approval(const json& doc) {
    ServerApproval approval;
    if (!doc.is_object()) return approval;
    const json* mcp = doc.contains("mcp") && doc["mcp"].is_object() ? &doc["mcp"] : nullptr;
    if (mcp != nullptr) {
        if (auto names = string_list(*mcp, "excluded"))
            approval.exclude(std::move(*names), "the file's mcp.excluded lists it");
        if (auto names = string_list(*mcp, "allowed"))
            approval.allow_only(std::move(*names), "the file's mcp.allowed does not list it");
    }
    if (auto names = string_list(doc, "excludeMCPServers"))
        approval.exclude(std::move(*names), "the file's excludeMCPServers lists it");
    if (auto names = string_list(doc, "allowMCPServers"))
        approval.allow_only(std::move(*names), "the file's allowMCPServers does not list it");
    return approval;
}

ServerApproval claude_local_approval(const json& project, std::string_view dir) {
    ServerApproval approval;
    if (auto names = string_list(project, "disabledMcpServers"))
        approval.exclude(std::move(*names), "Claude Code has it disabled in project " +
                                                std::string(dir) + " (disabledMcpServers)");
    return approval;
}

ServerApproval claude_project_approval(std::string_view project_dir,
                                       const std::vector<ApprovalSource>& sources) {
    std::vector<std::string> enabled;
    bool enable_all = false;
    ServerApproval approval;
    for (const ApprovalSource& source : sources) {
        json doc = json::parse(source.text, nullptr, false, true);
        if (doc.is_discarded() || !doc.is_object()) continue;
        if (source.is_claude_json) {
            if (!doc.contains("projects") || !doc["projects"].is_object()) continue;
            const auto project = doc["projects"].find(std::string(project_dir));
            if (project == doc["projects"].end() || !project->is_object()) continue;
            doc = *project;
        }
        if (auto names = string_list(doc, "disabledMcpjsonServers"))
            approval.exclude(
                std::move(*names),
                "Claude Code has it disabled (disabledMcpjsonServers in " + source.path + ")");
        if (auto names = string_list(doc, "enabledMcpjsonServers"))
            enabled.insert(enabled.end(), names->begin(), names->end());
        if (doc.contains("enableAllProjectMcpServers") && doc["enableAllProjectMcpServers"] == true)
            enable_all = true;
    }
    if (!enable_all)
        approval.allow_only(std::move(enabled),
                            "Claude Code has not approved it for project " +
                                std::string(project_dir) +
                                " (enabledMcpjsonServers does not list it): approve it there "
                                "first");
    return approval;
}

ServerApproval read_claude_project_approval(const std::string& project_dir,
                                            const std::string& home) {
    std::vector<ApprovalSource> sources;
    const auto add = [&](const fs::path& path, bool is_claude_json) {
        std::string text;
        if (mcpd::config::read_text_file(path.string(), text) == 0)
            sources.push_back({path.string(), std::move(text), is_claude_json});
    };
    if (!home.empty()) add(fs::path(home) / ".claude.json", true);
    add(fs::path(project_dir) / ".claude" / "settings.local.json", false);
    add(fs::path(project_dir) / ".claude" / "settings.json", false);
    if (!home.empty()) add(fs::path(home) / ".claude" / "settings.json", false);
    return claude_project_approval(project_dir, sources);
}

bool is_claude_project_file(std::string_view path) {
    return fs::path(path).filename() == ".mcp.json";
}

}  // namespace mcpctl
