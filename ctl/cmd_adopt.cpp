// mcpctl adopt [AGENT|FILE...] [--group NAME] [--dry-run] [--undo] [--registry PATH]: import an
// agent's stdio servers into the registry and rewrite its file to reach them through mcpd.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <system_error>

#include "ctl/adopt.h"
#include "ctl/adopt_backup.h"
#include "ctl/adopt_files.h"
#include "ctl/adopt_list.h"
#include "ctl/adopt_record.h"
#include "ctl/adopt_registry.h"
#include "ctl/adopt_report.h"
#include "ctl/adopt_undo.h"
#include "ctl/adopt_work.h"
#include "ctl/command.h"
#include "ctl/import_mcp_json.h"
#include "ctl/output.h"
#include "ctl/registry_append.h"
#include "ctl/server_approval.h"

namespace mcpctl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr OptionSpec kOptions[] = {
    {'\0', "group", "NAME",
     "replace the servers with one entry running 'mcpctl connect NAME' and add [groups.NAME]"},
    {'\0', "dry-run", "", "say what would change, write nothing"},
    {'\0', "undo", "", "put each file back from its FILE.mcpd-backup"},
    {'\0', "force", "", "with --undo: restore a file even though it changed since adopt wrote it"},
    {'\0', "registry", "PATH", "the registry the servers go to (default: mcpd's default)"},
    {'\0', "list", "", "say which agents' files are here and which servers each would move"},
};

int fail(const Context& ctx, const std::string& message) {
    if (ctx.output.json())
        ctx.output.print_json({{"error", {{"code", "adopt"}, {"message", message}}}});
    else
        ctx.output.error(message);
    return kExitError;
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
        const char* codex_home = std::getenv("CODEX_HOME");
        mcpd::Result<std::vector<std::string>> files =
            agent_files(name, home ? home : "", cwd, codex_home ? codex_home : "");
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

// The approvals of a Claude Code project file's servers; none for any other file.
ServerApproval approval_for(const std::string& path) {
    if (!is_claude_project_file(path)) return {};
    std::error_code ec;
    const fs::path dir = fs::weakly_canonical(fs::absolute(path, ec).parent_path(), ec);
    const char* home = std::getenv("HOME");
    return read_claude_project_approval(dir.string(), home != nullptr ? home : "");
}

// Read and plan every file; servers adopted by an earlier file are known to the later ones,
// and `refused` servers stay in their files. A file whose backup adopt cannot vouch for is
// not adopted (`records`: null in a dry run without a record directory).
std::vector<FileWork> plan_files(const std::vector<Target>& targets, const std::string& group,
                                 const std::vector<RefusedServer>& refused,
                                 const AdoptRecords* records) {
    std::vector<FileWork> work;
    AdoptOptions options{.group = group, .adopted_before = {}, .approval = {}, .refused = refused};
    for (const RefusedServer& server : refused) options.adopted_before.push_back(server.server);
    for (const Target& target : targets) {
        FileWork item{.target = target,
                      .plan = {},
                      .error = {},
                      .link_target = {},
                      .backup_exists = false,
                      .added = {},
                      .reused = {}};
        if (const std::string written = write_target(target.path); written != target.path)
            item.link_target = written;
        const mcpd::Result<std::string> text = read_text_file(target.path);
        options.approval = approval_for(target.path);
        options.format = format_of(target.path);
        mcpd::Result<AdoptPlan> plan =
            text ? plan_adopt(text.value(), options)
                 : mcpd::Result<AdoptPlan>(mcpd::permanent_failure(text.error()));
        if (plan) {
            item.plan = std::move(plan).value();
            for (const ImportedServer& server : item.plan.servers)
                options.adopted_before.push_back(server);
        } else {
            item.error = target.path + ": " + plan.error();
        }
        if (item.error.empty() && item.plan.changed && records != nullptr) {
            const BackupState backup = backup_state(target.path, *records);
            item.backup_exists = backup.exists;
            if (!backup.foreign.empty())
                item.error = target.path + " is left as it is: " + backup.foreign;
        }
        work.push_back(std::move(item));
    }
    return work;
}

// Back up and rewrite every changed file; false when one could not be written.
bool write_files(const Context& ctx, const std::vector<FileWork>& work,
                 const AdoptRecords& records) {
    bool ok = true;
    for (const FileWork& item : work) {
        if (!item.error.empty() || !item.plan.changed) continue;
        if (auto written = write_adopted(item.target.path, item.plan.text, records); !written) {
            ctx.output.error(item.target.path + " was not changed: " + written.error());
            ok = false;
        }
    }
    return ok;
}

// Print what changes, then (unless a dry run) add to the registry, rewrite the files and ask
// mcpd to reload.
int apply(const Context& ctx, Adoption& adoption, const AdoptRecords* records) {
    const bool dry_run = ctx.line().has("dry-run");
    const bool json_mode = ctx.output.json();
    int code = kExitOk;
    bool files_change = false;
    std::size_t added = 0;
    const bool registry_changes = !adoption.additions.empty() || !adoption.group_toml.empty();
    if (registry_changes && adoption.registry.readable_by_others())
        adoption.notes.push_back(
            adoption.registry.path +
            " can be read by other users: the env values of the servers "
            "added go to env files only its owner can read (mode 0600), never into it; "
            "'chmod 600 " +
            adoption.registry.target + "' keeps their commands private too");
    json report = {{"files", json::array()},  {"registry", adoption.registry.path},
                   {"notes", adoption.notes}, {"toml", adoption.display_toml},
                   {"dry_run", dry_run},      {"written", false}};
    for (const FileWork& item : adoption.work) {
        if (!item.error.empty()) code = kExitError;
        files_change = files_change || (item.plan.changed && item.error.empty());
        added += item.added.size();
        report["files"].push_back(file_report(item));
        if (!json_mode) print_file(ctx, item, dry_run);
    }
    if (!json_mode) print_registry(ctx, adoption, dry_run);
    const auto finish = [&](int exit_code) {
        if (json_mode) ctx.output.print_json(report);
        return exit_code;
    };
    if (!files_change && !registry_changes) {
        if (!json_mode) ctx.output.print_text("nothing to change\n");
        return finish(code);
    }
    if (dry_run || records == nullptr) {
        if (!json_mode) ctx.output.print_text("dry run: nothing was written\n");
        return finish(code);
    }
    if (registry_changes) {
        const mcpd::Result<AppendOutcome> appended =
            append_to_registry(adoption.registry, adoption.additions, adoption.group_toml);
        if (!appended) {
            if (json_mode)
                report["error"] = {{"code", "adopt"}, {"message", appended.error()}};
            else
                ctx.output.error(appended.error() + "; no agent file was changed");
            return finish(kExitError);
        }
        report["env_files"] = appended.value().env_files;
        // The agents move over only once mcpd took the registry (or will, when it starts): a
        // refused reload leaves them on their own servers rather than on names mcpd lacks.
        const std::string wrote = "added " + std::to_string(added) +
                                  (added == 1 ? " server" : " servers") + " to " +
                                  adoption.registry.path;
        if (const int reloaded = reload_after_write(ctx, wrote, report); reloaded != kExitOk) {
            ctx.output.error(
                "no agent file was changed: fix the registry, then run adopt "
                "again (it reuses the servers added now)");
            return finish(reloaded);
        }
    }
    if (!write_files(ctx, adoption.work, *records)) code = kExitError;
    report["written"] = true;
    return finish(code);
}

int exec(const Context& ctx) {
    const bool dry_run = ctx.line().has("dry-run") || ctx.line().has("list");
    const std::string group = ctx.line().value("group");
    if (ctx.line().has("group") && group.empty()) return fail(ctx, "--group needs a name");
    if (ctx.line().has("force") && !ctx.line().has("undo"))
        return fail(ctx, "--force only goes with --undo");
    if (!dry_run && ctx.endpoint.remote())
        return fail(ctx, "adopt edits files on this machine, but mcpd is on " +
                             ctx.endpoint.describe() + ": run it there");
    if (ctx.line().has("list") && (ctx.line().has("undo") || ctx.line().has("group")))
        return fail(ctx, "--list goes with no --undo or --group");
    const mcpd::Result<std::vector<Target>> targets = resolve_targets(ctx);
    if (!targets) return fail(ctx, targets.error());
    if (ctx.line().has("list")) {
        // Each file on its own: what adopting that agent alone would move.
        std::vector<FileWork> work;
        for (const Target& target : targets.value())
            for (FileWork& item : plan_files({target}, "", {}, nullptr))
                work.push_back(std::move(item));
        return list_agents(ctx, work);
    }
    const std::string registry = ctx.line().value("registry", default_registry_path());
    if (ctx.line().has("undo")) return undo_adopt(ctx, targets.value(), registry);
    if (targets.value().empty())
        return fail(ctx, "no agent configuration found; name a FILE, or see 'mcpctl adopt --help'");

    // From reading the registry to the last file written, one run at a time.
    std::optional<RegistryLock> lock;
    if (!dry_run) {
        mcpd::Result<RegistryLock> taken = RegistryLock::take(registry);
        if (!taken) return fail(ctx, taken.error());
        lock.emplace(std::move(taken).value());
    }
    mcpd::Result<AdoptRecords> records = AdoptRecords::open();
    if (!records && !dry_run) return fail(ctx, records.error());
    const AdoptRecords* record_dir = records ? &records.value() : nullptr;
    mcpd::Result<RegistryState> state = read_registry_state(registry);
    if (!state) return fail(ctx, state.error());

    Adoption adoption;
    adoption.registry = std::move(state).value();
    adoption.work = plan_files(targets.value(), group, {}, record_dir);
    if (const std::vector<RefusedServer> refused =
            refused_servers(adoption.work, adoption.registry);
        !refused.empty())
        adoption.work = plan_files(targets.value(), group, refused, record_dir);
    plan_additions(adoption);
    if (!group.empty()) {
        mcpd::Result<std::string> table = group_addition(adoption, group);
        if (!table) return fail(ctx, table.error());
        adoption.group_toml = std::move(table).value();
    }
    adoption.display_toml = display_additions(adoption);
    return apply(ctx, adoption, record_dir);
}

}  // namespace

extern const Command cmd_adopt{
    .name = "adopt",
    .usage =
        "adopt [--group NAME] [--dry-run] [--undo [--force]] [--list] [--registry PATH] "
        "[AGENT|FILE...]",
    .summary = "move an agent's stdio MCP servers onto mcpd, rewriting its configuration",
    .help =
        "For each AGENT (below; with none, every agent whose files exist) or FILE: add its\n"
        "stdio servers to the registry, as 'import --write' does, then rewrite the file so that\n"
        "those entries run 'mcpctl connect NAME'. Only servers the agent has turned on are\n"
        "taken: a .mcp.json server Claude Code has approved, none that Gemini's mcp.excluded,\n"
        "a \"disabled\": true or an enabled = false / enabled: false names. Remote servers and\n"
        "entries mcpd cannot run are left as they are and said so. Only those entries' bytes\n"
        "change: comments, key order and every other key stay; a file that cannot be edited\n"
        "so is left as it is, with the reason. Files (a FILE's format is by its name: .toml,\n"
        ".yaml or .yml, else JSON with comments):\n"
        "  claude-code     ~/.claude.json (user and project servers), ./.mcp.json\n"
        "  claude-desktop  ~/.config/Claude/claude_desktop_config.json\n"
        "  cursor          ~/.cursor/mcp.json, ./.cursor/mcp.json\n"
        "  vscode          ~/.config/Code/User/mcp.json, ./.vscode/mcp.json\n"
        "  gemini          ~/.gemini/settings.json\n"
        "  codex           $CODEX_HOME/config.toml (~/.codex), ./.codex/config.toml\n"
        "  zed             ~/.config/zed/settings.json, ./.zed/settings.json (context_servers)\n"
        "  opencode        ~/.config/opencode/opencode.json, ./opencode.json, ./opencode.jsonc\n"
        "  windsurf        ~/.codeium/windsurf/mcp_config.json\n"
        "  kiro            ~/.kiro/settings/mcp.json, ./.kiro/settings/mcp.json\n"
        "  goose           ~/.config/goose/config.yaml (extensions)\n"
        "  continue        ~/.continue/config.yaml, ./.continue/mcpServers/*\n"
        "  lmstudio        ~/.lmstudio/mcp.json\n"
        "--list says which of them have files here and which servers each would move.\n"
        "\n"
        "The registry is locked while adopt runs, each new table is checked by mcpd's loader\n"
        "first (a server that would not load stays in the agent's file), and the file is\n"
        "replaced whole; a new registry is 0600. Env values go to env files of mode 0600 beside\n"
        "the registry, never into it. A server the registry has under the same name is reused\n"
        "when it is the same, and refused when it runs something else.\n"
        "\n"
        "The first rewrite of FILE keeps the original as FILE.mcpd-backup, created anew (one\n"
        "adopt did not write is refused) and recorded in ~/.local/state/mcpd/adopt; the file\n"
        "keeps its owner and mode, and a link is written through to its target. --undo puts\n"
        "the backup back unless the file changed since (--force: even then). Running adopt\n"
        "again changes nothing. With --group NAME (JSON files) the stdio entries make way for\n"
        "one entry, NAME, running 'mcpctl connect NAME', and [groups.NAME] lists them in the\n"
        "registry. --dry-run prints the changes and the registry tables and writes nothing.\n",
    .options = kOptions,
    .min_args = 0,
    .max_args = Command::kUnlimited,
    .build = nullptr,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
