#include "ctl/adopt_undo.h"

#include <sys/stat.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "ctl/adopt_backup.h"
#include "ctl/output.h"

namespace mcpctl {

using nlohmann::json;

int undo_adopt(const Context& ctx, const std::vector<Target>& targets,
               const std::string& registry) {
    const bool dry_run = ctx.line().has("dry-run");
    const bool force = ctx.line().has("force");
    json restored = json::array();
    std::vector<std::string> servers;
    int code = kExitOk;
    mcpd::Result<AdoptRecords> records = AdoptRecords::open();
    for (const Target& target : targets) {
        const std::string backup = backup_path(target.path);
        struct stat st {};
        if (::lstat(backup.c_str(), &st) != 0) {
            if (target.agent.empty()) {
                ctx.output.error(target.path + ": no " + backup + " to restore it from");
                code = kExitError;
            }
            continue;
        }
        mcpd::Result<std::string> text =
            records ? restore_adopted(target.path, records.value(), force, dry_run)
                    : mcpd::Result<std::string>(records.failure());
        if (!text) {
            ctx.output.error(target.path + " was not restored: " + text.error());
            code = kExitError;
            continue;
        }
        AdoptOptions options;
        options.format = format_of(target.path);
        if (const auto plan = plan_adopt(text.value(), options); plan)
            for (const ImportedServer& server : plan.value().servers)
                if (std::find(servers.begin(), servers.end(), server.name) == servers.end())
                    servers.push_back(server.name);
        restored.push_back(target.path);
        if (!ctx.output.json())
            ctx.output.print_text((dry_run ? "would restore " : "restored ") + describe(target) +
                                  " from " + backup + '\n');
    }
    if (ctx.output.json()) {
        ctx.output.print_json({{"restored", restored},
                               {"registry", registry},
                               {"servers", servers},
                               {"dry_run", dry_run}});
    } else if (restored.empty() && code == kExitOk) {
        ctx.output.print_text("nothing to undo: no .mcpd-backup beside the files\n");
    } else if (!servers.empty()) {
        ctx.output.print_text("the registry " + registry + " still has " + join(servers, ", ") +
                              ": remove their [servers.NAME] tables if you no longer want them\n");
    }
    return code;
}

}  // namespace mcpctl
