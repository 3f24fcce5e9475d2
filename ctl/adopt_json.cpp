#include "ctl/adopt_json.h"

#include <nlohmann/json.hpp>

#include "ctl/adopt_entries.h"
#include "ctl/adopt_json_shapes.h"
#include "ctl/jsonc_edit.h"

namespace mcpctl {

namespace {

using nlohmann::json;

// One map of servers in the file: its key path, and how the summary names its entries.
struct ServerMap {
    std::vector<std::string> path;
    std::string label;        // empty, or "project DIR"
    ServerApproval approval;  // the switches of its project, if any
    JsonShape shape = JsonShape::mcp_servers;
};

bool has_object(const json& object, const char* key) {
    return object.contains(key) && object[key].is_object();
}

std::vector<ServerMap> server_maps(const json& doc) {
    std::vector<ServerMap> maps;
    if (!doc.is_object()) return maps;
    if (has_object(doc, "mcpServers"))
        maps.push_back({{"mcpServers"}, "", {}});
    else if (has_object(doc, "servers"))
        maps.push_back({{"servers"}, "", {}});
    else if (has_object(doc, "mcp") && has_object(doc["mcp"], "servers"))
        maps.push_back({{"mcp", "servers"}, "", {}});
    else if (has_object(doc, "mcp"))  // opencode: "mcp": {NAME: {"type": "local", ...}}
        maps.push_back({{"mcp"}, "", {}, JsonShape::opencode});
    if (has_object(doc, "context_servers"))  // Zed
        maps.push_back({{"context_servers"}, "", {}, JsonShape::zed});
    if (has_object(doc, "projects"))
        for (const auto& [dir, project] : doc["projects"].items())
            if (project.is_object() && has_object(project, "mcpServers"))
                maps.push_back({{"projects", dir, "mcpServers"},
                                "project " + dir,
                                claude_local_approval(project, dir)});
    return maps;
}

ImportShape import_shape(const ServerMap& map) {
    if (map.shape == JsonShape::zed) return ImportShape::zed;
    if (map.shape == JsonShape::opencode) return ImportShape::opencode;
    if (map.path.front() == "servers") return ImportShape::vscode_servers;
    if (map.path.front() == "mcp") return ImportShape::vscode_settings;
    return ImportShape::mcp_servers;
}

// The server the entry connects to (`mcpctl connect NAME`).
std::string connect_target(const json& entry) {
    if (entry.is_object() && entry.contains("args") && entry["args"].is_array() &&
        entry["args"].size() >= 2 && entry["args"][1].is_string())
        return entry["args"][1].get<std::string>();
    return {};
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
            } catch (const json::exception&) {
                value = nullptr;  // reported below as an entry that is not an object
            }
            std::string left;
            values_.push_back(normalized_entry(map.shape, value, left));
            Entry entry;
            if (left.empty())
                entry = classify_entry(member.key, values_.back());
            else
                entry.reason = std::move(left);
            entries_.push_back(std::move(entry));
            if (admit_entry(entries_.back(), member.key, where(map, member),
                            {&map.approval, &approval_}, options_, plan_))
                stdio_.push_back(i);
        }
        if (stdio_.empty()) return mcpd::Done{};
        return options_.group.empty() ? rewrite_each(map) : rewrite_into_group(map);
    }

private:
    std::string where(const ServerMap& map, const JsonMember& member) const {
        return map.label.empty() ? member.key : member.key + " (" + map.label + ")";
    }

    mcpd::Result<mcpd::Done> rewrite_each(const ServerMap& map) {
        for (const std::size_t i : stdio_) {
            const std::string& name = entries_[i].server.name;
            if (auto done = rewrite_json_entry(text_, members_[i], map.shape, name, edits_); !done)
                return done;
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
            const bool typed = map.shape == JsonShape::mcp_servers && values_[first].is_object() &&
                               values_[first].contains("type");
            edits_.push_back({like.key_span.begin, like.value.end,
                              json_quote(group) + ": " +
                                  connect_json_entry(text_, like, map.shape, group, typed)});
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
    std::vector<json> values_;  // in the mcpServers shape
    std::vector<Entry> entries_;
    std::vector<std::size_t> stdio_;  // the members that are adopted
};

// nlohmann's parse error without its "[json.exception...] " prefix.
std::string parse_error_text(const json::exception& error) {
    std::string what = error.what();
    if (const auto bracket = what.find("] "); what.starts_with('[') && bracket != std::string::npos)
        what.erase(0, bracket + 2);
    return what;
}

}  // namespace

mcpd::Result<AdoptPlan> plan_adopt_json(std::string_view text, const AdoptOptions& options) {
    const std::string strict = without_trailing_commas(text);
    json doc;
    try {
        doc = json::parse(strict, nullptr, true, true);
    } catch (const json::exception& e) {
        // A parse error, or a number too large for a double (out_of_range).
        std::string sentence = "not valid JSON: ";
        sentence += parse_error_text(e);
        return mcpd::permanent_failure(std::move(sentence));
    }
    AdoptPlan plan;
    plan.text = std::string(text);
    const std::vector<ServerMap> maps = server_maps(doc);
    plan.has_servers = !maps.empty();
    if (!maps.empty()) plan.shape = import_shape(maps.front());
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

}  // namespace mcpctl
