#include "ctl/adopt_entries.h"

#include <algorithm>

namespace mcpctl {

namespace {

using nlohmann::json;

// Whether a string of the entry's command, args, env or cwd holds a ${...} reference, which
// only the agent fills in (${input:key}, ${workspaceFolder}, ${HOME}, ${{ secrets.KEY }}).
bool has_agent_variable(const json& entry) {
    const auto refers = [](const json& value) {
        return value.is_string() && value.get<std::string>().find("${") != std::string::npos;
    };
    for (const char* key : {"command", "cwd"})
        if (entry.contains(key) && refers(entry[key])) return true;
    for (const char* key : {"args", "env"})
        if (entry.contains(key) && entry[key].is_structured())
            for (const auto& item : entry[key])
                if (refers(item)) return true;
    return false;
}

}  // namespace

Entry classify_entry(const std::string& key, const json& entry) {
    Entry out;
    if (entry.is_object()) {
        for (const char* url_key : {"url", "httpUrl", "serverUrl"}) {
            if (!entry.contains(url_key)) continue;
            const json& url = entry[url_key];
            out.reason = "remote server (url ";
            out.reason += url.is_string() ? url.get<std::string>() : url.dump();
            out.reason += ')';
            return out;
        }
        if (entry.contains("type") && entry["type"].is_string() && entry["type"] != "stdio") {
            out.reason = "remote server (type " + entry["type"].get<std::string>() + ")";
            return out;
        }
        if (entry.contains("envFile")) {
            out.reason = "it reads its environment from envFile, which the registry cannot take";
            return out;
        }
        if (has_agent_variable(entry)) {
            out.reason = "it uses ${...} variables that only the agent fills in";
            return out;
        }
    }
    const mcpd::Result<ImportResult> converted =
        convert_mcp_json(json{{"mcpServers", {{key, entry}}}}.dump());
    if (!converted || converted.value().servers.empty()) {
        out.reason = converted && !converted.value().skipped.empty()
                         ? converted.value().skipped.front().reason
                         : "it cannot be read as a server";
        if (out.reason.find("'mcpctl connect'") != std::string::npos)
            out.kind = EntryKind::connected;
        return out;
    }
    out.kind = EntryKind::stdio;
    out.server = converted.value().servers.front();
    out.notes = converted.value().renamed;
    return out;
}

bool same_definition(const ImportedServer& a, const ImportedServer& b) {
    return a.command == b.command && a.args == b.args && a.env == b.env && a.cwd == b.cwd;
}

bool admit_entry(Entry& entry, const std::string& key, const std::string& where,
                 const std::vector<const ServerApproval*>& approvals, const AdoptOptions& options,
                 AdoptPlan& plan) {
    if (entry.kind == EntryKind::stdio) {
        std::string why;
        for (const ServerApproval* approval : approvals)
            if (why.empty()) why = approval->refusal(key);
        for (const RefusedServer& refused : options.refused)
            if (why.empty() && refused.server.name == entry.server.name &&
                same_definition(refused.server, entry.server))
                why = refused.reason;
        if (!why.empty()) {
            entry.kind = EntryKind::left;
            entry.reason = std::move(why);
        }
    }
    if (entry.kind == EntryKind::connected) {
        plan.connected.push_back(where);
        return false;
    }
    if (entry.kind == EntryKind::left) {
        plan.left.push_back({where, entry.reason});
        return false;
    }
    const auto named = [&](const ImportedServer& server) {
        return server.name == entry.server.name;
    };
    const auto same_name = std::find_if(plan.servers.begin(), plan.servers.end(), named);
    const auto before =
        std::find_if(options.adopted_before.begin(), options.adopted_before.end(), named);
    if ((same_name != plan.servers.end() && !same_definition(*same_name, entry.server)) ||
        (before != options.adopted_before.end() && !same_definition(*before, entry.server))) {
        entry.kind = EntryKind::left;
        plan.left.push_back({where, "another entry named '" + entry.server.name +
                                        "' with another command, args, env or cwd is "
                                        "adopted; import this one under a name of its own"});
        return false;
    }
    if (same_name == plan.servers.end()) plan.servers.push_back(entry.server);
    for (const std::string& renamed : entry.notes) plan.notes.push_back(renamed);
    return true;
}

}  // namespace mcpctl
