#include "ctl/adopt.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ctl/jsonc_edit.h"

namespace mcpctl {

namespace {

using nlohmann::json;

// An agent and where it keeps its servers: relative to $HOME and to the current directory.
struct AgentSpec {
    std::string_view name;
    std::string_view user_file;
    std::string_view project_file;  // empty when the agent has none
};

constexpr AgentSpec kAgents[] = {
    {"claude-code", ".claude.json", ".mcp.json"},
    {"claude-desktop", ".config/Claude/claude_desktop_config.json", ""},
    {"cursor", ".cursor/mcp.json", ".cursor/mcp.json"},
    {"vscode", ".config/Code/User/mcp.json", ".vscode/mcp.json"},
    {"gemini", ".gemini/settings.json", ""},
};
constexpr std::string_view kAgentNames[] = {"claude-code", "claude-desktop", "cursor", "vscode",
                                            "gemini"};

// One map of servers in the file: its key path, and how the summary names its entries.
struct ServerMap {
    std::vector<std::string> path;
    std::string label;        // empty, or "project DIR"
    ServerApproval approval;  // the switches of its project, if any
};

std::vector<ServerMap> server_maps(const json& doc) {
    std::vector<ServerMap> maps;
    if (!doc.is_object()) return maps;
    const auto has_object = [](const json& object, const char* key) {
        return object.contains(key) && object[key].is_object();
    };
    if (has_object(doc, "mcpServers"))
        maps.push_back({{"mcpServers"}, "", {}});
    else if (has_object(doc, "servers"))
        maps.push_back({{"servers"}, "", {}});
    else if (has_object(doc, "mcp") && has_object(doc["mcp"], "servers"))
        maps.push_back({{"mcp", "servers"}, "", {}});
    if (has_object(doc, "projects"))
        for (const auto& [dir, project] : doc["projects"].items())
            if (project.is_object() && has_object(project, "mcpServers"))
                maps.push_back({{"projects", dir, "mcpServers"},
                                "project " + dir,
                                claude_local_approval(project, dir)});
    return maps;
}

enum class EntryKind { stdio, connected, left };

struct Entry {
    EntryKind kind = EntryKind::left;
    std::string reason;  // for left
    ImportedServer server;
    std::vector<std::string> notes;
};

// Whether a string of the entry's command, args, env or cwd holds a ${...} reference, which
// only the agent fills in (${input:key}, ${workspaceFolder}, ${HOME}).
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

Entry classify(const std::string& key, const json& entry) {
    Entry out;
    if (entry.is_object()) {
        for (const char* url_key : {"url", "httpUrl"}) {
            if (!entry.contains(url_key)) continue;
            const json& url = entry[url_key];
            out.reason = "remote server (url " +
                         (url.is_string() ? url.get<std::string>() : url.dump()) + ")";
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

// The server the entry connects to (`mcpctl connect NAME`).
std::string connect_target(const json& entry) {
    if (entry.is_object() && entry.contains("args") && entry["args"].is_array() &&
        entry["args"].size() >= 2 && entry["args"][1].is_string())
        return entry["args"][1].get<std::string>();
    return {};
}

std::string connect_args(std::string_view name) {
    return "[\"connect\", " + json_quote(name) + "]";
}

// An entry's value running `mcpctl connect NAME`, laid out like `like` (the entry it replaces):
// on one line, or one key per line indented one step more than its key.
std::string connect_entry(std::string_view text, const JsonMember& like, std::string_view name,
                          bool typed) {
    std::vector<std::string> fields;
    if (typed) fields.emplace_back("\"type\": \"stdio\"");
    fields.emplace_back("\"command\": \"mcpctl\"");
    fields.push_back("\"args\": " + connect_args(name));
    const auto join_with = [&](std::string_view separator) {
        std::string out;
        for (std::size_t i = 0; i < fields.size(); ++i)
            out += (i ? std::string(separator) : "") + fields[i];
        return out;
    };
    if (text.substr(like.value.begin, like.value.size()).find('\n') == std::string_view::npos)
        return "{" + join_with(", ") + "}";
    const std::string indent(line_indent(text, like.key_span.begin));
    std::string inner = indent + "  ";
    if (const auto members = object_members(text, like.value);
        members && !members.value().empty()) {
        const std::string_view first = line_indent(text, members.value().front().key_span.begin);
        if (first.size() > indent.size() && first.starts_with(indent)) inner = first;
    }
    return "{\n" + inner + join_with(",\n" + inner) + "\n" + indent + "}";
}

// The edits that make the entry `member` run `mcpctl connect NAME`: command and args replaced,
// env and cwd removed, every other key kept.
mcpd::Result<mcpd::Done> rewrite_entry(std::string_view text, const JsonMember& member,
                                       std::string_view name, std::vector<TextEdit>& edits) {
    mcpd::Result<std::vector<JsonMember>> listed = object_members(text, member.value);
    if (!listed) return mcpd::permanent_failure(listed.error());
    const std::vector<JsonMember>& fields = listed.value();
    const auto last_of = [&](std::string_view key) {
        const auto found = std::find_if(fields.rbegin(), fields.rend(),
                                        [&](const JsonMember& field) { return field.key == key; });
        return found == fields.rend() ? nullptr : &*found;
    };
    const JsonMember* command = last_of("command");
    if (command == nullptr)
        return mcpd::permanent_failure("the entry " + member.key + " has no command");
    edits.push_back({command->value.begin, command->value.end, "\"mcpctl\""});
    if (const JsonMember* args = last_of("args")) {
        edits.push_back({args->value.begin, args->value.end, connect_args(name)});
    } else {
        const std::string separator =
            starts_line(text, command->key_span.begin)
                ? "\n" + std::string(line_indent(text, command->key_span.begin))
                : " ";
        edits.push_back({command->value.end, command->value.end,
                         "," + separator + "\"args\": " + connect_args(name)});
    }
    std::vector<bool> remove;
    for (const JsonMember& field : fields)
        remove.push_back(field.key == "env" || field.key == "cwd");
    for (TextEdit& edit : remove_members(text, fields, remove)) edits.push_back(std::move(edit));
    return mcpd::Done{};
}

// Plan one map of servers: classify its entries into `plan`, add the edits.
class MapPlanner {
public:
    MapPlanner(std::string_view text, std::string_view strict, const AdoptOptions& options,
               const ServerApproval& approval, AdoptPlan& plan, std::vector<TextEdit>& edits)
        : text_(text),
          strict_(strict),
          options_(options),
          approval_(approval),
          plan_(plan),
          edits_(edits) {}

    mcpd::Result<mcpd::Done> plan(const ServerMap& map) {
        mcpd::Result<JsonSpan> span = locate_value(text_, map.path);
        if (!span) return mcpd::permanent_failure(span.error());
        mcpd::Result<std::vector<JsonMember>> listed = object_members(text_, span.value());
        if (!listed) return mcpd::permanent_failure(listed.error());
        members_ = std::move(listed).value();
        values_.clear();
        entries_.clear();
        stdio_.clear();
        for (std::size_t i = 0; i < members_.size(); ++i) {
            const JsonMember& member = members_[i];
            json value;
            try {
                value = json::parse(strict_.substr(member.value.begin, member.value.size()),
                                    nullptr, true, true);
            } catch (const json::parse_error&) {
                value = nullptr;  // reported below as an entry that is not an object
            }
            values_.push_back(value);
            entries_.push_back(classify(member.key, value));
            turned_off(map, i);
            note(map, i);
        }
        if (stdio_.empty()) return mcpd::Done{};
        return options_.group.empty() ? rewrite_each(map) : rewrite_into_group(map);
    }

private:
    std::string where(const ServerMap& map, const JsonMember& member) const {
        return map.label.empty() ? member.key : member.key + " (" + map.label + ")";
    }

    // A stdio entry the agent has not turned on, or that is refused, stays as it is.
    void turned_off(const ServerMap& map, std::size_t i) {
        Entry& entry = entries_[i];
        if (entry.kind != EntryKind::stdio) return;
        std::string why = map.approval.refusal(members_[i].key);
        if (why.empty()) why = approval_.refusal(members_[i].key);
        for (const RefusedServer& refused : options_.refused)
            if (why.empty() && refused.server.name == entry.server.name &&
                same_definition(refused.server, entry.server))
                why = refused.reason;
        if (why.empty()) return;
        entry.kind = EntryKind::left;
        entry.reason = std::move(why);
    }

    // Record what becomes of entry `i`; a stdio entry joins stdio_ unless its name is taken.
    void note(const ServerMap& map, std::size_t i) {
        Entry& entry = entries_[i];
        const std::string here = where(map, members_[i]);
        if (entry.kind == EntryKind::connected) {
            plan_.connected.push_back(here);
            return;
        }
        if (entry.kind == EntryKind::left) {
            plan_.left.push_back({here, entry.reason});
            return;
        }
        const auto named = [&](const ImportedServer& server) {
            return server.name == entry.server.name;
        };
        const auto same_name = std::find_if(plan_.servers.begin(), plan_.servers.end(), named);
        const auto before =
            std::find_if(options_.adopted_before.begin(), options_.adopted_before.end(), named);
        if ((same_name != plan_.servers.end() && !same_definition(*same_name, entry.server)) ||
            (before != options_.adopted_before.end() && !same_definition(*before, entry.server))) {
            entry.kind = EntryKind::left;
            plan_.left.push_back({here, "another entry named '" + entry.server.name +
                                            "' with another command, args, env or cwd is "
                                            "adopted; import this one under a name of its own"});
            return;
        }
        if (same_name == plan_.servers.end()) plan_.servers.push_back(entry.server);
        for (const std::string& renamed : entry.notes) plan_.notes.push_back(renamed);
        stdio_.push_back(i);
    }

    mcpd::Result<mcpd::Done> rewrite_each(const ServerMap& map) {
        for (const std::size_t i : stdio_) {
            const std::string& name = entries_[i].server.name;
            if (auto done = rewrite_entry(text_, members_[i], name, edits_); !done) return done;
            plan_.rewritten.push_back(where(map, members_[i]) + ": runs 'mcpctl connect " + name +
                                      "'");
        }
        return mcpd::Done{};
    }

    mcpd::Result<mcpd::Done> rewrite_into_group(const ServerMap& map) {
        const std::string& group = options_.group;
        std::vector<bool> remove(members_.size(), false);
        bool have_entry = false;
        for (std::size_t i = 0; i < members_.size(); ++i) {
            if (members_[i].key != group) continue;
            const std::string here = where(map, members_[i]);
            if (entries_[i].kind == EntryKind::connected && connect_target(values_[i]) == group) {
                have_entry = true;
                continue;
            }
            if (entries_[i].kind == EntryKind::stdio)
                return mcpd::permanent_failure("--group " + group + ": the server " + here +
                                               " has that name; give the group another one");
            return mcpd::permanent_failure("--group " + group + ": the entry " + here +
                                           " already has that name; give the group another one");
        }
        for (const std::size_t i : stdio_) {
            plan_.rewritten.push_back(where(map, members_[i]) + ": in group " + group);
            remove[i] = true;
        }
        if (!have_entry) {
            const std::size_t first = stdio_.front();
            const JsonMember& like = members_[first];
            edits_.push_back(
                {like.key_span.begin, like.value.end,
                 json_quote(group) + ": " +
                     connect_entry(text_, like, group, values_[first].contains("type"))});
            remove[first] = false;
            plan_.rewritten.push_back((map.label.empty() ? group : group + " (" + map.label + ")") +
                                      ": runs 'mcpctl connect " + group + "'");
        }
        for (TextEdit& edit : remove_members(text_, members_, remove))
            edits_.push_back(std::move(edit));
        return mcpd::Done{};
    }

    std::string_view text_;
    std::string_view strict_;
    const AdoptOptions& options_;
    const ServerApproval& approval_;  // the file's and the caller's
    AdoptPlan& plan_;
    std::vector<TextEdit>& edits_;
    std::vector<JsonMember> members_;
    std::vector<json> values_;
    std::vector<Entry> entries_;
    std::vector<std::size_t> stdio_;  // the members that are adopted
};

// nlohmann's parse error without its "[json.exception...] " prefix.
std::string parse_error_text(const json::parse_error& error) {
    std::string what = error.what();
    if (const auto bracket = what.find("] "); what.starts_with('[') && bracket != std::string::npos)
        what.erase(0, bracket + 2);
    return what;
}

}  // namespace

std::span<const std::string_view> known_agents() {
    return kAgentNames;
}

mcpd::Result<std::vector<std::string>> agent_files(std::string_view agent, std::string_view home,
                                                   std::string_view cwd) {
    const auto spec = std::find_if(std::begin(kAgents), std::end(kAgents),
                                   [&](const AgentSpec& s) { return s.name == agent; });
    if (spec == std::end(kAgents)) {
        std::string known;
        for (const std::string_view name : kAgentNames)
            known += (known.empty() ? "" : ", ") + std::string(name);
        return mcpd::permanent_failure("unknown agent '" + std::string(agent) +
                                       "'; the known agents are " + known +
                                       " (or give the path of a file)");
    }
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    const auto add = [&](std::string_view base, std::string_view relative) {
        if (relative.empty()) return;
        const std::string file = (fs::path(base) / relative).lexically_normal().string();
        if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
    };
    add(home, spec->user_file);
    add(cwd, spec->project_file);
    return files;
}

mcpd::Result<AdoptPlan> plan_adopt(std::string_view text, const AdoptOptions& options) {
    if (!options.group.empty() && sanitize_server_name(options.group) != options.group)
        return mcpd::permanent_failure("--group " + options.group +
                                       ": a group's name may only hold letters, digits, '_', '.' "
                                       "and '-'");
    const std::string strict = without_trailing_commas(text);
    json doc;
    try {
        doc = json::parse(strict, nullptr, true, true);
    } catch (const json::parse_error& e) {
        std::string sentence = "not valid JSON: ";
        sentence += parse_error_text(e);
        return mcpd::permanent_failure(std::move(sentence));
    }
    AdoptPlan plan;
    plan.text = std::string(text);
    const std::vector<ServerMap> maps = server_maps(doc);
    plan.has_servers = !maps.empty();
    std::vector<TextEdit> edits;
    ServerApproval approval = file_approval(doc);
    approval.add(options.approval);
    MapPlanner planner(text, strict, options, approval, plan, edits);
    for (const ServerMap& map : maps)
        if (mcpd::Result<mcpd::Done> done = planner.plan(map); !done) return done.failure();
    if (edits.empty()) return plan;
    mcpd::Result<std::string> edited = apply_edits(text, std::move(edits));
    if (!edited) return mcpd::permanent_failure(edited.error());
    if (!json::accept(without_trailing_commas(edited.value()), true))
        return mcpd::permanent_failure(
            "its rewrite would not be valid JSON, so it is left as it is");
    plan.text = std::move(edited).value();
    plan.changed = plan.text != text;
    return plan;
}

std::string render_group_toml(std::string_view group, std::span<const std::string> servers) {
    std::string text = "# Adopted by mcpctl: one session over these servers (mcpctl connect " +
                       std::string(group) + ")\n[groups." + toml_key(group) + "]\nservers = [";
    for (std::size_t i = 0; i < servers.size(); ++i)
        text += (i ? ", " : "") + toml_string(servers[i]);
    return text + "]\n";
}

mcpd::Result<std::optional<std::vector<std::string>>> registry_group_servers(
    std::string_view registry_text, std::string_view group) {
    toml::table table;
    try {
        table = toml::parse(registry_text);
    } catch (const toml::parse_error& e) {
        return mcpd::permanent_failure("line " + std::to_string(e.source().begin.line) + ": " +
                                       std::string(e.description()));
    }
    const toml::table* groups = table["groups"].as_table();
    const toml::table* found = groups ? (*groups)[group].as_table() : nullptr;
    if (found == nullptr) return std::optional<std::vector<std::string>>{};
    std::vector<std::string> servers;
    if (const toml::array* list = (*found)["servers"].as_array())
        for (const toml::node& item : *list)
            if (const auto name = item.value<std::string>()) servers.push_back(*name);
    return std::optional<std::vector<std::string>>{std::move(servers)};
}

ImportResult without_env_values(ImportResult result) {
    for (ImportedServer& server : result.servers)
        for (auto& variable : server.env) variable.second = "(hidden)";
    return result;
}

}  // namespace mcpctl
