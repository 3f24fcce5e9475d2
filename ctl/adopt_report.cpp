#include "ctl/adopt_report.h"

#include <algorithm>

#include "ctl/adopt_backup.h"
#include "ctl/output.h"

namespace mcpctl {

using nlohmann::json;

std::string describe(const Target& target) {
    return target.agent.empty() ? target.path : target.path + " (" + target.agent + ")";
}

void print_file(const Context& ctx, const FileWork& item, bool dry_run) {
    std::string text = describe(item.target);
    if (!item.error.empty()) {
        ctx.output.error(item.error);
        return;
    }
    const AdoptPlan& plan = item.plan;
    if (!plan.has_servers) {
        ctx.output.print_text(text + ": no MCP servers in it\n");
        return;
    }
    if (!plan.changed) text += ": nothing to change";
    text += '\n';
    if (!item.link_target.empty())
        text += std::string("  a symbolic link: ") + (plan.changed && !dry_run ? "" : "would be ") +
                "written through it to " + item.link_target + '\n';
    for (const std::string& line : plan.rewritten) text += "  " + line + '\n';
    for (const LeftEntry& left : plan.left)
        text += "  left as it is: " + left.where + ": " + left.reason + '\n';
    for (const std::string& where : plan.connected)
        text += "  already through mcpd: " + where + '\n';
    for (const std::string& note : plan.notes) text += "  note: " + note + '\n';
    if (plan.changed)
        text += "  backup: " + backup_path(item.target.path) +
                (item.backup_exists ? " (kept from the first adopt)"
                                    : (dry_run ? " (would be written)" : "")) +
                '\n';
    ctx.output.print_text(text);
}

json file_report(const FileWork& item) {
    json left = json::array();
    for (const LeftEntry& entry : item.plan.left)
        left.push_back({{"entry", entry.where}, {"reason", entry.reason}});
    return {{"path", item.target.path},
            {"link_target", item.link_target.empty() ? json(nullptr) : json(item.link_target)},
            {"agent", item.target.agent.empty() ? json(nullptr) : json(item.target.agent)},
            {"changed", item.plan.changed},
            {"rewritten", item.plan.rewritten},
            {"left", left},
            {"connected", item.plan.connected},
            {"added", item.added},
            {"reused", item.reused},
            {"error", item.error.empty() ? json(nullptr) : json(item.error)}};
}

void print_registry(const Context& ctx, const Adoption& adoption, bool dry_run) {
    std::vector<std::string> reused;
    for (const FileWork& item : adoption.work)
        for (const std::string& name : item.reused)
            if (std::find(reused.begin(), reused.end(), name) == reused.end())
                reused.push_back(name);
    std::string text;
    for (const std::string& note : adoption.notes) text += "note: " + note + '\n';
    if (!reused.empty())
        text += "already in " + adoption.registry.path + ": " + join(reused, ", ") + '\n';
    if (dry_run && !adoption.display_toml.empty())
        text += "would add to " + adoption.registry.path + ":\n" + adoption.display_toml;
    ctx.output.print_text(text);
}

}  // namespace mcpctl
