#include "ctl/import_formats.h"

#include "ctl/adopt.h"
#include "ctl/jsonc_edit.h"

namespace mcpctl {

namespace {

// The servers adopt would take from the file, as an import.
mcpd::Result<ImportResult> through_adopt(std::string_view text, AdoptFormat format,
                                         const ServerApproval& approval) {
    AdoptOptions options;
    options.approval = approval;
    options.format = format;
    mcpd::Result<AdoptPlan> planned = plan_adopt(text, options);
    if (!planned) return planned.failure();
    const AdoptPlan& plan = planned.value();
    if (!plan.has_servers)
        return mcpd::permanent_failure(
            format == AdoptFormat::toml   ? "no [mcp_servers.NAME] table in it"
            : format == AdoptFormat::yaml ? "no extensions map or mcpServers list in it"
                                          : "no \"mcpServers\", \"servers\", \"mcp\" or "
                                            "\"context_servers\" object in it");
    ImportResult result;
    result.shape = plan.shape;
    result.servers = plan.servers;
    result.renamed = plan.notes;
    for (const LeftEntry& left : plan.left) result.skipped.push_back({left.where, left.reason});
    for (const std::string& where : plan.connected)
        result.skipped.push_back({where, "it already runs 'mcpctl connect'"});
    return result;
}

// Append each piece to `text`.
void add(std::string& text, std::initializer_list<std::string_view> pieces) {
    for (const std::string_view piece : pieces) text += piece;
}

}  // namespace

mcpd::Result<ImportResult> convert_agent_file(std::string_view path, std::string_view text,
                                              const ServerApproval& approval) {
    const AdoptFormat format = format_of(path);
    if (format != AdoptFormat::json) return through_adopt(text, format, approval);
    mcpd::Result<ImportResult> converted = convert_mcp_json(text, approval);
    if (converted) return converted;
    // Zed's context_servers and opencode's mcp map are read as adopt reads them.
    mcpd::Result<ImportResult> other = through_adopt(text, format, approval);
    return other ? std::move(other) : std::move(converted);
}

std::string agent_connect_hint(const ImportResult& result) {
    std::string text;
    switch (result.shape) {
        case ImportShape::codex:
            for (const ImportedServer& server : result.servers) {
                if (!text.empty()) text += '\n';
                add(text, {"[mcp_servers.", toml_key(server.original_name), "]\n",
                           "command = \"mcpctl\"\nargs = [\"connect\", ", toml_string(server.name),
                           "]\n"});
            }
            return text;
        case ImportShape::goose:
            text = "extensions:\n";
            for (const ImportedServer& server : result.servers) {
                const std::string key = json_quote(server.original_name);
                add(text, {"  ", key, ":\n    name: ", key, "\n    type: stdio\n    cmd: mcpctl\n",
                           "    args: [\"connect\", ", json_quote(server.name), "]\n",
                           "    enabled: true\n"});
            }
            return text;
        case ImportShape::continue_:
            text = "mcpServers:\n";
            for (const ImportedServer& server : result.servers)
                add(text, {"  - name: ", json_quote(server.original_name),
                           "\n    command: mcpctl\n    args: [\"connect\", ",
                           json_quote(server.name), "]\n"});
            return text;
        default:
            return connect_hint(result);
    }
}

}  // namespace mcpctl
