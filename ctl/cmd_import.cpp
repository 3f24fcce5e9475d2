// mcpctl import FILE [--write] [--registry PATH]: an agent's MCP server configuration as
// mcpd registry TOML, optionally appended to the registry and reloaded.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/control_protocol.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/import_mcp_json.h"
#include "ctl/output.h"

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

// The file's text; the failure completes "FILE ...".
mcpd::Result<std::string> read_file(const std::string& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return mcpd::permanent_failure("is a directory, not a file");
    std::ifstream in(path, std::ios::binary);
    if (!in) return mcpd::permanent_failure(std::string("cannot be read: ") + std::strerror(errno));
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) return mcpd::permanent_failure("cannot be read");
    return buffer.str();
}

// Append `toml` to the registry at `path`, creating it when missing. Fails when a server of the
// same name is already there (nothing is written then) or writing fails.
mcpd::Result<mcpd::Done> append_to_registry(const std::string& path, const ImportResult& result,
                                            const std::string& toml) {
    std::error_code ec;
    std::string existing;
    if (fs::exists(path, ec)) {
        mcpd::Result<std::string> read = read_file(path);
        if (!read) return mcpd::permanent_failure(path + ": " + read.error());
        existing = std::move(read).value();
    }
    std::vector<std::string> duplicates;
    for (const auto& server : result.servers)
        if (registry_has_server(existing, server.name)) duplicates.push_back(server.name);
    if (!duplicates.empty())
        return mcpd::permanent_failure(
            path + " already has " +
            (duplicates.size() == 1 ? "a server named " : "servers named ") +
            join(duplicates, ", ") + "; nothing was written");
    const fs::path parent = fs::path(path).parent_path();
    if (!parent.empty() && !fs::create_directories(parent, ec) && ec)
        return mcpd::permanent_failure("cannot create " + parent.string() + ": " + ec.message());
    std::string text;
    if (!existing.empty()) text = existing.ends_with('\n') ? "\n" : "\n\n";
    text += toml;
    std::ofstream out(path, std::ios::binary | std::ios::app);
    if (!out || !(out << text) || !out.flush())
        return mcpd::permanent_failure("cannot write " + path + ": " + std::strerror(errno));
    return mcpd::Done{};
}

int exec(const Context& ctx) {
    const std::string& file = ctx.line().args.at(0);
    if (ctx.line().has("write") && ctx.endpoint.remote())
        return fail(ctx, "--write edits a registry on this machine, but mcpd is on " +
                             ctx.endpoint.describe() + ": run the import there");
    const mcpd::Result<std::string> text = read_file(file);
    if (!text) return fail(ctx, file + ": " + text.error());
    const mcpd::Result<ImportResult> converted = convert_mcp_json(text.value());
    if (!converted) return fail(ctx, file + ": " + converted.error());
    const ImportResult& result = converted.value();

    std::error_code ec;
    const fs::path absolute = fs::absolute(file, ec);
    const std::string toml = render_toml(result, ec ? file : absolute.lexically_normal().string());
    const bool json_mode = ctx.output.json();
    int exit_code = result.skipped.empty() ? kExitOk : kExitError;

    if (!json_mode) {
        ctx.output.print_text(toml);
        for (const auto& skipped : result.skipped)
            ctx.output.error("skipped " + skipped.name + ": " + skipped.reason);
        for (const auto& note : result.renamed) ctx.output.error(note);
        if (!result.servers.empty())
            ctx.output.err() << "To use them through mcpd, configure the agent with:\n"
                             << connect_hint(result) << '\n'
                             << std::flush;
    }

    json report = {{"toml", toml}, {"skipped", json::array()}, {"written", nullptr}};
    for (const auto& skipped : result.skipped)
        report["skipped"].push_back({{"name", skipped.name}, {"reason", skipped.reason}});
    const auto finish = [&](int code) {
        if (json_mode) ctx.output.print_json(report);
        return code;
    };

    if (!ctx.line().has("write")) return finish(exit_code);
    if (result.servers.empty()) {
        if (!json_mode) ctx.output.error("nothing to write");
        return finish(exit_code);
    }
    const std::string registry = ctx.line().value("registry", default_registry_path());
    if (const mcpd::Result<mcpd::Done> appended = append_to_registry(registry, result, toml);
        !appended) {
        if (json_mode)
            report["error"] = {{"code", "import"}, {"message", appended.error()}};
        else
            ctx.output.error(appended.error());
        return finish(kExitError);
    }
    report["written"] = registry;

    const std::string wrote = "wrote " + std::to_string(result.servers.size()) +
                              (result.servers.size() == 1 ? " server" : " servers") + " to " +
                              registry;
    DaemonClient client(ctx.endpoint);
    mcpd::control::Reply reply;
    if (!client.connect() || !client.call(mcpd::control::to_json(mcpd::control::ReloadRequest{}),
                                          reply, kReplyTimeout)) {
        if (client.error().code == "not_running") {
            report["reload"] = nullptr;
            if (!json_mode)
                ctx.output.error(wrote + "; mcpd is not running (nothing listens on " +
                                 ctx.endpoint.describe() + "), it will read them when it starts");
            return finish(exit_code);
        }
        if (json_mode)
            report["error"] = {{"code", client.error().code}, {"message", client.error().message}};
        else
            ctx.output.error(wrote + "; " + client.error().message);
        return finish(client.error().exit_code);
    }
    if (!reply.ok) {
        if (json_mode) {
            report["error"] = reply.error;
        } else {
            ctx.output.error(wrote + ", but mcpd did not reload it:");
            ctx.output.daemon_error(reply.error);
        }
        return finish(kExitError);
    }
    const json& reload = reply.result;
    report["reload"] = reload;
    if (!json_mode) {
        const mcpd::Result<const Command*> reload_command = find_command("reload");
        ctx.output.print_text(wrote + "; mcpd reloaded it:\n" +
                              (reload_command && reload_command.value()->render
                                   ? reload_command.value()->render(reload)
                                   : reload.dump() + '\n'));
    }
    return finish(exit_code);
}

}  // namespace

extern const Command cmd_import{
    .name = "import",
    .usage = "import [--write] [--registry PATH] FILE",
    .summary = "convert an agent's MCP server list (JSON) into registry TOML",
    .help =
        "Read FILE, an agent's MCP configuration: {\"mcpServers\": {...}} as Claude Code,\n"
        "Claude Desktop and Cursor write it, or {\"servers\": {...}} (VS Code mcp.json) or\n"
        "{\"mcp\": {\"servers\": {...}}} (VS Code settings), and print the same servers as\n"
        "[servers.NAME] tables for mcpd's registry. Entries mcpd cannot run (remote url/http/\n"
        "sse servers, entries without a command, entries already running 'mcpctl connect')\n"
        "are reported on stderr as 'skipped NAME: why' and make the exit code 1. Names with\n"
        "characters other than letters, digits, '_', '.' and '-' get '-' instead, and say so.\n"
        "On stderr follows the agent configuration that reaches the servers through mcpd.\n"
        "\n"
        "With --write the tables are appended to the registry (--registry PATH, else mcpd's\n"
        "default; created when missing), unless it already has a server of the same name,\n"
        "and mcpd is asked to reload it. With --json: {\"toml\", \"skipped\", \"written\"}.\n",
    .options = kOptions,
    .min_args = 1,
    .max_args = 1,
    .build = nullptr,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
