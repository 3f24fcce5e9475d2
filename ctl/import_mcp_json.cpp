#include "ctl/import_mcp_json.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "ctl/known_servers.h"

namespace mcpctl {

namespace {

using nlohmann::json;

bool name_char(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

// Why an entry cannot be run by mcpd, or empty when it can.
std::string unrunnable(const json& entry) {
    if (!entry.is_object()) return "its entry is not a JSON object";
    if (entry.contains("url")) {
        const json& url = entry["url"];
        return "it is a remote server (url " +
               (url.is_string() ? url.get<std::string>() : url.dump()) +
               "); mcpd only runs local stdio servers";
    }
    if (entry.contains("type")) {
        const json& type = entry["type"];
        const std::string name = type.is_string() ? type.get<std::string>() : type.dump();
        if (name == "http" || name == "sse" || name == "streamable-http")
            return "it is a remote server (type " + name + "); mcpd only runs local stdio servers";
        if (name != "stdio") return "its type '" + name + "' is not stdio";
    }
    if (entry.contains("disabled") && entry["disabled"] == true)
        return "it is turned off in the file (\"disabled\": true)";
    if (!entry.contains("command")) return "it has no command";
    if (!entry["command"].is_string() || entry["command"].get<std::string>().empty())
        return "its command is not a non-empty string";
    if (entry.contains("args")) {
        if (!entry["args"].is_array()) return "its args is not a list";
        for (const auto& arg : entry["args"])
            if (!arg.is_string()) return "its args holds " + arg.dump() + ", not a string";
    }
    if (entry.contains("env")) {
        if (!entry["env"].is_object()) return "its env is not an object";
        for (const auto& [key, value] : entry["env"].items())
            if (!value.is_string() && !value.is_number() && !value.is_boolean())
                return "its env value for '" + key + "' is not a string";
    }
    if (entry.contains("cwd") && !entry["cwd"].is_string()) return "its cwd is not a string";

    const std::string command = entry["command"].get<std::string>();
    const auto slash = command.rfind('/');
    const std::string base = slash == std::string::npos ? command : command.substr(slash + 1);
    if (base == "mcpctl" && entry.contains("args") && !entry["args"].empty() &&
        entry["args"][0] == "connect")
        return "it already runs 'mcpctl connect'";
    return {};
}

// A comment-safe copy: no line breaks or other control characters.
std::string comment_text(std::string_view text) {
    std::string out;
    for (const char c : text) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    return out;
}

}  // namespace

std::string sanitize_server_name(std::string_view name) {
    std::string out;
    for (const char c : name) out += (name_char(c) || c == '.') ? c : '-';
    return out;
}

std::string toml_string(std::string_view value) {
    std::string out = "\"";
    for (const char c : value) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\f':
                out += "\\f";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
                    char buffer[8];
                    std::snprintf(buffer, sizeof buffer, "\\u%04X",
                                  static_cast<unsigned>(static_cast<unsigned char>(c)));
                    out += buffer;
                } else {
                    out += c;
                }
        }
    }
    return out + '"';
}

std::string toml_key(std::string_view key) {
    if (key.empty()) return "\"\"";
    for (const char c : key)
        if (!name_char(c)) return toml_string(key);
    return std::string(key);
}

mcpd::Result<ImportResult> convert_mcp_json(std::string_view text, const ServerApproval& approval) {
    json doc;
    try {
        doc = json::parse(text.begin(), text.end(), nullptr, true, true);
    } catch (const json::exception& e) {  // a parse error, or a number out of range
        std::string what = e.what();
        if (const auto bracket = what.find("] ");
            what.starts_with('[') && bracket != std::string::npos)
            what.erase(0, bracket + 2);
        std::string sentence = "not valid JSON: ";  // appended: gcc 12 warns on "literal" + string
        sentence += what;
        return mcpd::permanent_failure(std::move(sentence));
    }
    const json* servers = nullptr;
    ImportResult out;
    if (doc.is_object() && doc.contains("mcpServers")) {
        out.shape = ImportShape::mcp_servers;
        servers = &doc["mcpServers"];
    } else if (doc.is_object() && doc.contains("servers")) {
        out.shape = ImportShape::vscode_servers;
        servers = &doc["servers"];
    } else if (doc.is_object() && doc.contains("mcp") && doc["mcp"].is_object() &&
               doc["mcp"].contains("servers")) {
        out.shape = ImportShape::vscode_settings;
        servers = &doc["mcp"]["servers"];
    }
    if (servers == nullptr)
        return mcpd::permanent_failure(
            "no \"mcpServers\", \"servers\" or \"mcp\": {\"servers\"} object in it");
    if (!servers->is_object())
        return mcpd::permanent_failure("its list of servers is not a JSON object");

    ServerApproval switches = file_approval(doc);
    switches.add(approval);
    std::set<std::string> taken;
    for (const auto& [key, entry] : servers->items()) {
        if (std::string why = switches.refusal(key); !why.empty()) {
            out.skipped.push_back({key, why});
            continue;
        }
        if (std::string why = unrunnable(entry); !why.empty()) {
            out.skipped.push_back({key, why});
            continue;
        }
        ImportedServer server;
        server.original_name = key;
        server.name = sanitize_server_name(key);
        if (server.name.empty()) {
            out.skipped.push_back({key, "its name is empty"});
            continue;
        }
        if (taken.contains(server.name)) {
            out.skipped.push_back(
                {key, "its name becomes '" + server.name + "', which another entry already uses"});
            continue;
        }
        if (server.name != key)
            out.renamed.push_back("renamed '" + comment_text(key) + "' to '" + server.name +
                                  "' (server names are letters, digits, '_', '.' and '-')");
        taken.insert(server.name);
        server.command = entry["command"].get<std::string>();
        if (entry.contains("args"))
            for (const auto& arg : entry["args"]) server.args.push_back(arg.get<std::string>());
        if (entry.contains("env"))
            for (const auto& [name, value] : entry["env"].items())
                server.env.emplace_back(
                    name, value.is_string() ? value.get<std::string>() : value.dump());
        if (entry.contains("cwd")) server.cwd = entry["cwd"].get<std::string>();
        out.servers.push_back(std::move(server));
    }
    return out;
}

std::string_view project_scoped_package(const ImportedServer& server) {
    return project_scoped(server.command, server.args);
}

std::string render_toml(const ImportResult& result, std::string_view source) {
    std::string text;
    for (const auto& server : result.servers) {
        if (!text.empty()) text += '\n';
        text += "# Imported by mcpctl from " + comment_text(source);
        if (server.name != server.original_name)
            text += " (there named '" + comment_text(server.original_name) + "')";
        text += '\n';
        text += "[servers." + toml_key(server.name) + "]\n";
        text += "command = " + toml_string(server.command) + '\n';
        if (!server.args.empty()) {
            text += "args = [";
            for (std::size_t i = 0; i < server.args.size(); ++i)
                text += (i ? ", " : "") + toml_string(server.args[i]);
            text += "]\n";
        }
        if (!server.env_file.empty()) {
            text += "# its env (" + std::to_string(server.env.size()) +
                    (server.env.size() == 1 ? " variable" : " variables") +
                    ") is in this file, mode 0600, not here: values are often keys\n";
            text += "env_file = " + toml_string(server.env_file) + '\n';
        } else if (!server.env.empty()) {
            text += "env = { ";
            for (std::size_t i = 0; i < server.env.size(); ++i)
                text += (i ? ", " : "") + toml_key(server.env[i].first) + " = " +
                        toml_string(server.env[i].second);
            text += " }\n";
        }
        if (!server.cwd.empty()) text += "cwd = " + toml_string(server.cwd) + '\n';
        // Agents list every server as they start and call few: none runs until one is called.
        text += "lazy = true\n";
        if (const std::string_view scoped = project_scoped_package(server); !scoped.empty()) {
            text += "# " + std::string(scoped) +
                    " works on the agent's project (its roots or directory): one process\n"
                    "# per project, so that no agent sees another project's files.\n"
                    "sharing = \"project\"\n";
        }
        if (const SandboxFit fit = sandbox_fit(server.command, server.args); !fit.preset.empty()) {
            text += "# " + std::string(fit.why) + "\n";
            text += "sandbox = \"" + std::string(fit.preset) + "\"\n";
        }
    }
    return text;
}

std::string connect_hint(const ImportResult& result) {
    json servers = json::object();
    for (const auto& server : result.servers) {
        json entry = json::object();
        if (result.shape == ImportShape::opencode) {
            entry["type"] = "local";
            entry["command"] = {"mcpctl", "connect", server.name};
            servers[server.original_name] = entry;
            continue;
        }
        if (result.shape == ImportShape::vscode_servers ||
            result.shape == ImportShape::vscode_settings)
            entry["type"] = "stdio";
        entry["command"] = "mcpctl";
        entry["args"] = {"connect", server.name};
        servers[server.original_name] = entry;
    }
    json doc;
    switch (result.shape) {
        case ImportShape::zed:
            doc = {{"context_servers", servers}};
            break;
        case ImportShape::opencode:
            doc = {{"mcp", servers}};
            break;
        default:
            doc = {{"mcpServers", servers}};
            break;
        case ImportShape::vscode_servers:
            doc = {{"servers", servers}};
            break;
        case ImportShape::vscode_settings:
            doc = {{"mcp", {{"servers", servers}}}};
            break;
    }
    return doc.dump(2);
}

bool registry_has_server(std::string_view registry_text, std::string_view name) {
    const std::string bare = "[servers." + std::string(name) + "]";
    const std::string quoted = "[servers.\"" + std::string(name) + "\"]";
    std::size_t start = 0;
    while (start <= registry_text.size()) {
        std::size_t end = registry_text.find('\n', start);
        if (end == std::string_view::npos) end = registry_text.size();
        std::string_view line = registry_text.substr(start, end - start);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
            line.remove_prefix(1);
        if (line.starts_with(bare) || line.starts_with(quoted)) return true;
        start = end + 1;
    }
    return false;
}

std::string default_registry_path() {
    if (::getuid() == 0) return "/etc/mcpd/mcpd.toml";
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/mcpd/mcpd.toml";
    const char* home = std::getenv("HOME");
    return std::string(home != nullptr ? home : "") + "/.config/mcpd/mcpd.toml";
}

}  // namespace mcpctl
