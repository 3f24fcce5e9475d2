// mcpctl import FILE [--write] [--registry PATH]: an agent's MCP server configuration as
// mcpd registry TOML, optionally appended to the registry and reloaded.
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "ctl/command.h"
#include "ctl/import_formats.h"
#include "ctl/import_mcp_json.h"
#include "ctl/output.h"
#include "ctl/registry_append.h"
#include "ctl/server_approval.h"

namespace mcpctl {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr OptionSpec kOptions[] = {
    {'\0', "write", "", "append the servers to the registry, then ask mcpd to reload it"},
    {'\0', "registry", "PATH", "the registry --write appends to (default: mcpd's default)"},
};

// A failure of our own: "mcpctl: MESSAGE" on stderr, or {"error": ...} in JSON mode.
int fail(const Context& ctx, const std::string& message) {
    if (ctx.output.json())
        ctx.output.print_json({{"error", {{"code", "import"}, {"message", message}}}});
    else
        ctx.output.error(message);
    return kExitError;
}

// Append the servers to the registry at `path` under its lock, creating it when missing: env
// values in env files, each table loaded as mcpd would first. Fails when a server of the same
// name is already there or would not load (nothing is written then) or writing fails.
mcpd::Result<AppendOutcome> append_servers(const std::string& path, const ImportResult& result,
                                           const std::string& source) {
    mcpd::Result<RegistryLock> lock = RegistryLock::take(path);
    if (!lock) return lock.failure();
    const mcpd::Result<RegistryState> registry = read_registry_state(path);
    if (!registry) return registry.failure();
    std::vector<std::string> duplicates;
    std::vector<RegistryAddition> additions;
    for (const auto& server : result.servers) {
        if (registry.value().loaded.find(server.name) != nullptr)
            duplicates.push_back(server.name);
        else if (const std::string why = addition_problem(registry.value(), server); !why.empty())
            return mcpd::permanent_failure(server.name + ": " + why + "; nothing was written");
        additions.push_back({server, source});
    }
    if (!duplicates.empty())
        return mcpd::permanent_failure(
            path + " already has " +
            (duplicates.size() == 1 ? "a server named " : "servers named ") +
            join(duplicates, ", ") + "; nothing was written");
    return append_to_registry(registry.value(), std::move(additions), "");
}

int exec(const Context& ctx) {
    const std::string& file = ctx.line().args.at(0);
    if (ctx.line().has("write") && ctx.endpoint.remote())
        return fail(ctx, "--write edits a registry on this machine, but mcpd is on " +
                             ctx.endpoint.describe() + ": run the import there");
    const mcpd::Result<std::string> text = read_text_file(file);
    if (!text) return fail(ctx, file + ": " + text.error());
    // A project's .mcp.json: only the servers Claude Code has approved there.
    ServerApproval approval;
    if (is_claude_project_file(file)) {
        std::error_code canonical_ec;
        const fs::path dir =
            fs::weakly_canonical(fs::absolute(file, canonical_ec).parent_path(), canonical_ec);
        const char* home = std::getenv("HOME");
        approval = read_claude_project_approval(dir.string(), home != nullptr ? home : "");
    }
    const mcpd::Result<ImportResult> converted = convert_agent_file(file, text.value(), approval);
    if (!converted) return fail(ctx, file + ": " + converted.error());
    const ImportResult& result = converted.value();

    std::error_code ec;
    const fs::path absolute = fs::absolute(file, ec);
    const std::string source = ec ? file : absolute.lexically_normal().string();
    // Written, env values go to env files; printed without --write, they are shown inline.
    const std::string toml = render_toml(result, source);
    const bool json_mode = ctx.output.json();
    int exit_code = result.skipped.empty() ? kExitOk : kExitError;

    const bool write = ctx.line().has("write");
    if (!json_mode) {
        if (!write) ctx.output.print_text(toml);
        for (const auto& skipped : result.skipped)
            ctx.output.error("skipped " + skipped.name + ": " + skipped.reason);
        for (const auto& note : result.renamed) ctx.output.error(note);
        if (!result.servers.empty())
            ctx.output.err() << "To use them through mcpd, configure the agent with:\n"
                             << agent_connect_hint(result) << '\n'
                             << std::flush;
    }

    json report = {{"toml", write ? json(nullptr) : json(toml)},
                   {"skipped", json::array()},
                   {"written", nullptr}};
    for (const auto& skipped : result.skipped)
        report["skipped"].push_back({{"name", skipped.name}, {"reason", skipped.reason}});
    const auto finish = [&](int code) {
        if (json_mode) ctx.output.print_json(report);
        return code;
    };

    if (!write) return finish(exit_code);
    if (result.servers.empty()) {
        if (!json_mode) ctx.output.error("nothing to write");
        return finish(exit_code);
    }
    const std::string registry = ctx.line().value("registry", default_registry_path());
    const mcpd::Result<AppendOutcome> appended = append_servers(registry, result, source);
    if (!appended) {
        if (json_mode)
            report["error"] = {{"code", "import"}, {"message", appended.error()}};
        else
            ctx.output.error(appended.error());
        return finish(kExitError);
    }
    report["written"] = registry;
    report["toml"] = appended.value().toml;
    report["env_files"] = appended.value().env_files;
    if (!json_mode) ctx.output.print_text(appended.value().toml);

    const std::string wrote = "wrote " + std::to_string(result.servers.size()) +
                              (result.servers.size() == 1 ? " server" : " servers") + " to " +
                              registry;
    const int reloaded = reload_after_write(ctx, wrote, report);
    return finish(reloaded == kExitOk ? exit_code : reloaded);
}

}  // namespace

extern const Command cmd_import{
    .name = "import",
    .usage = "import [--write] [--registry PATH] FILE",
    .summary = "convert an agent's MCP server list (JSON, TOML, YAML) into registry TOML",
    .help =
        "Read FILE, an agent's MCP configuration: {\"mcpServers\": {...}} as Claude Code,\n"
        "Claude Desktop, Cursor, Windsurf, Kiro and LM Studio write it, {\"servers\": {...}}\n"
        "(VS Code mcp.json), {\"mcp\": {\"servers\": {...}}} (VS Code settings), Zed's\n"
        "context_servers, opencode's mcp, Codex's [mcp_servers.NAME] (a .toml FILE), goose's\n"
        "extensions or Continue's mcpServers (a .yaml or .yml FILE), and print the same servers\n"
        "as [servers.NAME] tables for mcpd's registry. Entries mcpd cannot run (remote url/http/\n"
        "sse servers, entries without a command, entries already running 'mcpctl connect')\n"
        "are reported on stderr as 'skipped NAME: why' and make the exit code 1. Names with\n"
        "characters other than letters, digits, '_', '.' and '-' get '-' instead, and say so.\n"
        "On stderr follows the agent configuration that reaches the servers through mcpd.\n"
        "\n"
        "With --write the tables are appended to the registry (--registry PATH, else mcpd's\n"
        "default; created when missing), unless it already has a server of the same name,\n"
        "and mcpd is asked to reload it: under a lock, each table checked by mcpd's loader\n"
        "first, env values in env files of mode 0600 beside the registry (never in it), the\n"
        "registry replaced whole (0600 when new); the tables are printed as written. Only\n"
        "servers the agent turned on are taken: of a .mcp.json, those Claude Code approved.\n"
        "With --json: {\"toml\", \"skipped\", \"written\", \"env_files\"}.\n",
    .options = kOptions,
    .min_args = 1,
    .max_args = 1,
    .build = nullptr,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
