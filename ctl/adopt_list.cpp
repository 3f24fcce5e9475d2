#include "ctl/adopt_list.h"

#include <nlohmann/json.hpp>

#include "ctl/adopt_agents.h"
#include "ctl/output.h"

namespace mcpctl {

using nlohmann::json;

namespace {

json servers_of(const AdoptPlan& plan) {
    json names = json::array();
    for (const ImportedServer& server : plan.servers) names.push_back(server.name);
    return names;
}

std::string file_lines(const FileWork& item) {
    std::string text = "  ";
    text += item.target.path;
    if (!item.error.empty()) return text + ": cannot be adopted: " + item.error + '\n';
    if (!item.plan.has_servers) return text + ": no MCP servers in it\n";
    std::vector<std::string> names;
    for (const ImportedServer& server : item.plan.servers) names.push_back(server.name);
    text += names.empty() ? ": nothing to move" : ": would move " + join(names, ", ");
    text += '\n';
    for (const LeftEntry& left : item.plan.left)
        text += "    left as it is: " + left.where + ": " + left.reason + '\n';
    for (const std::string& where : item.plan.connected)
        text += "    already through mcpd: " + where + '\n';
    return text;
}

}  // namespace

int list_agents(const Context& ctx, const std::vector<FileWork>& work) {
    json agents = json::array();
    std::string text;
    for (const std::string_view agent : known_agents()) {
        json files = json::array();
        std::string lines;
        for (const FileWork& item : work) {
            if (item.target.agent != agent) continue;
            json left = json::array();
            for (const LeftEntry& entry : item.plan.left)
                left.push_back({{"entry", entry.where}, {"reason", entry.reason}});
            files.push_back({{"path", item.target.path},
                             {"servers", servers_of(item.plan)},
                             {"left", left},
                             {"connected", item.plan.connected},
                             {"error", item.error.empty() ? json(nullptr) : json(item.error)}});
            lines += file_lines(item);
        }
        agents.push_back({{"agent", agent}, {"present", !files.empty()}, {"files", files}});
        text += std::string(agent) + (lines.empty() ? ": no configuration here\n" : ":\n" + lines);
    }
    for (const FileWork& item : work)
        if (item.target.agent.empty()) text += item.target.path + ":\n" + file_lines(item);
    if (ctx.output.json())
        ctx.output.print_json({{"agents", agents}});
    else
        ctx.output.print_text(text);
    return kExitOk;
}

}  // namespace mcpctl
