// mcpctl adopt [AGENT|FILE...] [--group NAME] [--dry-run] [--undo] [--registry PATH]: import an
// agent's stdio servers into the registry and rewrite its file to reach them through mcpd.
#include <cstdlib>
#include <filesystem>
#include <set>
#include <system_error>

#include "ctl/adopt.h"
#include "ctl/adopt_files.h"
#include "ctl/command.h"
#include "ctl/import_mcp_json.h"
#include "ctl/output.h"
#include "ctl/registry_append.h"

namespace mcpctl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr OptionSpec kOptions[] = {
    {'\0', "group", "NAME",
     "replace the servers with one entry running 'mcpctl connect NAME' and add [groups.NAME]"},
    {'\0', "dry-run", "", "say what would change, write nothing"},
    {'\0', "undo", "", "put each file back from its FILE.mcpd-backup"},
    {'\0', "registry", "PATH", "the registry the servers go to (default: mcpd's default)"},
};

// One file to adopt; `agent` is empty for a FILE argument.
struct Target {
    std::string path;
    std::string agent;
};

// What adopt does to one file.
struct FileWork {
    Target target;
    AdoptPlan plan;
    std::string error;                // set when the file cannot be adopted
    std::vector<std::string> added;   // servers this file adds to the registry
    std::vector<std::string> reused;  // servers the registry already had
};

int fail(const Context& ctx, const std::string& message) {
    if (ctx.output.json())
        ctx.output.print_json({{"error", {{"code", "adopt"}, {"message", message}}}});
    else
        ctx.output.error(message);
    return kExitError;
}

// "PATH (agent)" or "PATH".
std::string describe(const Target& target) {
    return target.agent.empty() ? target.path : target.path + " (" + target.agent + ")";
}

bool exists(const std::string& path) {
    std::error_code ec;
    return fs::exists(path, ec);
}

// The files the arguments name: an agent's files that exist (the others are noted), or a FILE,
// which must exist. No argument: every agent's files that exist.
mcpd::Result<std::vector<Target>> resolve_targets(const Context& ctx) {
    const char* home = std::getenv("HOME");
    std::error_code ec;
    const std::string cwd = fs::current_path(ec).string();
    std::vector<std::string> names = ctx.line().args;
    const bool every_agent = names.empty();
    if (every_agent)
        for (const std::string_view agent : known_agents()) names.emplace_back(agent);
    std::vector<Target> targets;
    const auto add = [&](Target target) {
        for (const Target& known : targets)
            if (known.path == target.path) return;
        targets.push_back(std::move(target));
    };
    for (const std::string& name : names) {
        const bool is_agent =
            std::find(known_agents().begin(), known_agents().end(), name) != known_agents().end();
        if (!is_agent && (name.find('/') != std::string::npos || exists(name))) {
            if (!exists(name)) return mcpd::permanent_failure(name + ": no such file");
            add({name, ""});
            continue;
        }
        if (is_agent && (home == nullptr || home[0] != '/'))
            return mcpd::permanent_failure("HOME is not set to a directory, so the files of " +
                                           name + " cannot be found");
        mcpd::Result<std::vector<std::string>> files = agent_files(name, home ? home : "", cwd);
        if (!files) return mcpd::permanent_failure(files.error());
        for (const std::string& file : files.value()) {
            if (exists(file))
                add({file, name});
            else if (!every_agent && !ctx.output.json())
                ctx.output.err() << "mcpctl: " << name << ": no " << file << ", skipped\n";
        }
    }
    return targets;
}

// Read and plan every file; servers adopted by an earlier file are known to the later ones.
std::vector<FileWork> plan_files(const std::vector<Target>& targets, const std::string& group) {
    std::vector<FileWork> work;
    AdoptOptions options{.group = group, .adopted_before = {}};
    for (const Target& target : targets) {
        FileWork item{.target = target, .plan = {}, .error = {}, .added = {}, .reused = {}};
        const mcpd::Result<std::string> text = read_text_file(target.path);
        mcpd::Result<AdoptPlan> plan =
            text ? plan_adopt(text.value(), options) : mcpd::Result<AdoptPlan>(text.failure());
        if (plan) {
            item.plan = std::move(plan).value();
            for (const ImportedServer& server : item.plan.servers)
                options.adopted_before.push_back(server);
        } else {
            item.error = target.path + ": " + plan.error();
        }
        work.push_back(std::move(item));
    }
    return work;
}

// Split each file's servers into those the registry gets now and those it has; the TOML to
// append, each server once, with env values left out when `for_display`.
std::string registry_additions(std::vector<FileWork>& work, const std::string& registry_text,
                               bool for_display) {
    std::set<std::string> taken;
    std::string toml;
    for (FileWork& item : work) {
        ImportResult fresh;
        for (const ImportedServer& server : item.plan.servers) {
            if (registry_has_server(registry_text, server.name)) {
                item.reused.push_back(server.name);
            } else if (taken.insert(server.name).second) {
                item.added.push_back(server.name);
                fresh.servers.push_back(server);
            }
        }
        if (fresh.servers.empty()) continue;
        std::error_code ec;
        const fs::path absolute = fs::absolute(item.target.path, ec);
        const std::string source = ec ? item.target.path : absolute.lexically_normal().string();
        if (!toml.empty()) toml += '\n';
        toml += render_toml(for_display ? without_env_values(fresh) : fresh, source);
    }
    return toml;
}

// The [groups.NAME] table to append (empty when the registry has it), or the failure; a
// group that lists other servers is left as it is, with a note in `notes`.
mcpd::Result<std::string> group_addition(const std::vector<FileWork>& work,
                                         const std::string& registry,
                                         const std::string& registry_text, const std::string& group,
                                         std::vector<std::string>& notes) {
    std::vector<std::string> members;
    for (const FileWork& item : work)
        for (const ImportedServer& server : item.plan.servers) {
            if (server.name == group)
                return mcpd::permanent_failure("--group " + group +
                                               ": a server has that name; give the group another");
            if (std::find(members.begin(), members.end(), server.name) == members.end())
                members.push_back(server.name);
        }
    if (registry_has_server(registry_text, group))
        return mcpd::permanent_failure("--group " + group + ": " + registry +
                                       " has a server of that name; give the group another");
    const auto existing = registry_group_servers(registry_text, group);
    if (!existing) return mcpd::permanent_failure(registry + ": " + existing.error());
    if (!existing.value()) return members.empty() ? "" : render_group_toml(group, members);
    std::vector<std::string> missing;
    for (const std::string& name : members)
        if (std::find(existing.value()->begin(), existing.value()->end(), name) ==
            existing.value()->end())
            missing.push_back(name);
    if (!missing.empty())
        notes.push_back("[groups." + group + "] in " + registry + " already lists " +
                        join(*existing.value(), ", ") + "; it is left as it is: add " +
                        join(missing, ", ") + " to its servers for the agent to reach them");
    return std::string();
}

// The human summary of one file.
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
    for (const std::string& line : plan.rewritten) text += "  " + line + '\n';
    for (const LeftEntry& left : plan.left)
        text += "  left as it is: " + left.where + ": " + left.reason + '\n';
    for (const std::string& where : plan.connected)
        text += "  already through mcpd: " + where + '\n';
    for (const std::string& note : plan.notes) text += "  note: " + note + '\n';
    if (plan.changed)
        text += "  backup: " + backup_path(item.target.path) +
                (exists(backup_path(item.target.path)) ? " (kept from the first adopt)"
                                                       : (dry_run ? " (would be written)" : "")) +
                '\n';
    ctx.output.print_text(text);
}

json file_report(const FileWork& item) {
    json left = json::array();
    for (const LeftEntry& entry : item.plan.left)
        left.push_back({{"entry", entry.where}, {"reason", entry.reason}});
    return {{"path", item.target.path},
            {"agent", item.target.agent.empty() ? json(nullptr) : json(item.target.agent)},
            {"changed", item.plan.changed},
            {"rewritten", item.plan.rewritten},
            {"left", left},
            {"connected", item.plan.connected},
            {"added", item.added},
            {"reused", item.reused},
            {"error", item.error.empty() ? json(nullptr) : json(item.error)}};
}

// Back up and rewrite every changed file; false when one could not be written.
bool write_files(const Context& ctx, const std::vector<FileWork>& work) {
    bool ok = true;
    for (const FileWork& item : work) {
        if (!item.error.empty() || !item.plan.changed) continue;
        const std::string& path = item.target.path;
        const mcpd::Result<std::string> original = read_text_file(path);
        mcpd::Result<bool> backup = original ? write_backup(backup_path(path), original.value())
                                             : mcpd::Result<bool>(original.failure());
        mcpd::Result<mcpd::Done> written = backup ? replace_file(write_target(path), item.plan.text)
                                                  : mcpd::Result<mcpd::Done>(backup.failure());
        if (!written) {
            ctx.output.error(path + " was not changed: " + written.error());
            ok = false;
        }
    }
    return ok;
}

int undo(const Context& ctx, const std::vector<Target>& targets, const std::string& registry) {
    const bool dry_run = ctx.line().has("dry-run");
    json restored = json::array();
    std::vector<std::string> servers;
    int code = kExitOk;
    for (const Target& target : targets) {
        const std::string backup = backup_path(target.path);
        if (!exists(backup)) {
            if (target.agent.empty()) {
                ctx.output.error(target.path + ": no " + backup + " to restore it from");
                code = kExitError;
            }
            continue;
        }
        const mcpd::Result<std::string> text = read_text_file(backup);
        mcpd::Result<mcpd::Done> done =
            text ? (dry_run ? mcpd::Result<mcpd::Done>(mcpd::Done{})
                            : replace_file(write_target(target.path), text.value()))
                 : mcpd::Result<mcpd::Done>(mcpd::permanent_failure(backup + ": " + text.error()));
        std::error_code ec;
        if (done && !dry_run && !fs::remove(backup, ec) && ec)
            done = mcpd::permanent_failure("cannot remove " + backup + ": " + ec.message());
        if (!done) {
            ctx.output.error(target.path + " was not restored: " + done.error());
            code = kExitError;
            continue;
        }
        if (const auto plan = plan_adopt(text.value(), {}); plan)
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
    } else if (restored.empty()) {
        ctx.output.print_text("nothing to undo: no .mcpd-backup beside the files\n");
    } else if (!servers.empty()) {
        ctx.output.print_text("the registry " + registry + " still has " + join(servers, ", ") +
                              ": remove their [servers.NAME] tables if you no longer want them\n");
    }
    return code;
}

// Everything one run of adopt found out before writing anything.
struct Adoption {
    std::vector<FileWork> work;
    std::vector<std::string> notes;
    std::string registry;
    std::string registry_text;
    std::string toml;          // to append to the registry
    std::string display_toml;  // the same without env values
};

// The registry's side in words: what it gets and what it had.
void print_registry(const Context& ctx, const Adoption& adoption, bool dry_run) {
    std::vector<std::string> added;
    std::vector<std::string> reused;
    for (const FileWork& item : adoption.work) {
        added.insert(added.end(), item.added.begin(), item.added.end());
        for (const std::string& name : item.reused)
            if (std::find(reused.begin(), reused.end(), name) == reused.end())
                reused.push_back(name);
    }
    std::string text;
    for (const std::string& note : adoption.notes) text += "note: " + note + '\n';
    if (!reused.empty())
        text += "already in " + adoption.registry + ": " + join(reused, ", ") + '\n';
    if (dry_run && !adoption.toml.empty())
        text += "would add to " + adoption.registry + ":\n" + adoption.display_toml;
    ctx.output.print_text(text);
}

// Print what changes, then (unless a dry run) append to the registry, rewrite the files and
// ask mcpd to reload.
int apply(const Context& ctx, const Adoption& adoption) {
    const bool dry_run = ctx.line().has("dry-run");
    const bool json_mode = ctx.output.json();
    int code = kExitOk;
    bool files_change = false;
    std::size_t added = 0;
    json report = {{"files", json::array()},  {"registry", adoption.registry},
                   {"notes", adoption.notes}, {"toml", adoption.display_toml},
                   {"dry_run", dry_run},      {"written", false}};
    for (const FileWork& item : adoption.work) {
        if (!item.error.empty()) code = kExitError;
        files_change = files_change || item.plan.changed;
        added += item.added.size();
        report["files"].push_back(file_report(item));
        if (!json_mode) print_file(ctx, item, dry_run);
    }
    if (!json_mode) print_registry(ctx, adoption, dry_run);
    const auto finish = [&](int exit_code) {
        if (json_mode) ctx.output.print_json(report);
        return exit_code;
    };
    if (!files_change && adoption.toml.empty()) {
        if (!json_mode) ctx.output.print_text("nothing to change\n");
        return finish(code);
    }
    if (dry_run) {
        if (!json_mode) ctx.output.print_text("dry run: nothing was written\n");
        return finish(code);
    }
    if (!adoption.toml.empty()) {
        if (const auto appended =
                append_to_registry(adoption.registry, adoption.registry_text, adoption.toml);
            !appended) {
            ctx.output.error(appended.error() + "; no agent file was changed");
            return finish(kExitError);
        }
        // The agents move over only once mcpd took the registry (or will, when it starts): a
        // refused reload leaves them on their own servers rather than on names mcpd lacks.
        const std::string wrote = "added " + std::to_string(added) +
                                  (added == 1 ? " server" : " servers") + " to " +
                                  adoption.registry;
        if (const int reloaded = reload_after_write(ctx, wrote, report); reloaded != kExitOk) {
            ctx.output.error(
                "no agent file was changed: fix the registry, then run adopt "
                "again (it reuses the servers added now)");
            return finish(reloaded);
        }
    }
    if (!write_files(ctx, adoption.work)) code = kExitError;
    report["written"] = true;
    return finish(code);
}

int exec(const Context& ctx) {
    const bool dry_run = ctx.line().has("dry-run");
    const std::string group = ctx.line().value("group");
    if (ctx.line().has("group") && group.empty()) return fail(ctx, "--group needs a name");
    if (!dry_run && ctx.endpoint.remote())
        return fail(ctx, "adopt edits files on this machine, but mcpd is on " +
                             ctx.endpoint.describe() + ": run it there");
    const mcpd::Result<std::vector<Target>> targets = resolve_targets(ctx);
    if (!targets) return fail(ctx, targets.error());
    Adoption adoption;
    adoption.registry = ctx.line().value("registry", default_registry_path());
    if (ctx.line().has("undo")) return undo(ctx, targets.value(), adoption.registry);
    if (targets.value().empty())
        return fail(ctx, "no agent configuration found; name a FILE, or see 'mcpctl adopt --help'");

    mcpd::Result<std::string> registry_text = read_registry(adoption.registry);
    if (!registry_text) return fail(ctx, registry_text.error());
    adoption.registry_text = std::move(registry_text).value();
    adoption.work = plan_files(targets.value(), group);
    std::vector<FileWork> shown = adoption.work;  // registry_additions fills added/reused once
    adoption.toml = registry_additions(adoption.work, adoption.registry_text, false);
    adoption.display_toml = registry_additions(shown, adoption.registry_text, true);
    if (!group.empty()) {
        mcpd::Result<std::string> table = group_addition(
            adoption.work, adoption.registry, adoption.registry_text, group, adoption.notes);
        if (!table) return fail(ctx, table.error());
        for (std::string* toml : {&adoption.toml, &adoption.display_toml})
            if (!table.value().empty()) *toml += (toml->empty() ? "" : "\n") + table.value();
    }
    return apply(ctx, adoption);
}

}  // namespace

extern const Command cmd_adopt{
    .name = "adopt",
    .usage = "adopt [--group NAME] [--dry-run] [--undo] [--registry PATH] [AGENT|FILE...]",
    .summary = "move an agent's stdio MCP servers onto mcpd, rewriting its configuration",
    .help =
        "For each AGENT (claude-code, claude-desktop, cursor, vscode, gemini; with none, every\n"
        "agent whose files exist) or FILE: add its stdio servers to the registry, as 'import\n"
        "--write' does (a server the registry already has is reused), then rewrite the file so\n"
        "that those entries run 'mcpctl connect NAME' (their env and cwd now live in the\n"
        "registry). Remote servers and entries mcpd cannot run are left as they are and said so.\n"
        "Only those entries' bytes change: comments and every other key stay. Files:\n"
        "  claude-code     ~/.claude.json (user and project servers), ./.mcp.json\n"
        "  claude-desktop  ~/.config/Claude/claude_desktop_config.json\n"
        "  cursor          ~/.cursor/mcp.json, ./.cursor/mcp.json\n"
        "  vscode          ~/.config/Code/User/mcp.json, ./.vscode/mcp.json\n"
        "  gemini          ~/.gemini/settings.json\n"
        "\n"
        "The first rewrite of FILE keeps the original as FILE.mcpd-backup; --undo puts it back\n"
        "and removes the backup (the registry keeps the servers). Running adopt again changes\n"
        "nothing. With --group NAME the stdio entries make way for one entry, NAME, running\n"
        "'mcpctl connect NAME', and [groups.NAME] lists them in the registry. --dry-run prints\n"
        "the changes and the registry tables (env values hidden) and writes nothing.\n",
    .options = kOptions,
    .min_args = 0,
    .max_args = Command::kUnlimited,
    .build = nullptr,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
