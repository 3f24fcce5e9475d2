#include "ctl/adopt_yaml.h"

#include <nlohmann/json.hpp>

#include "ctl/adopt_entries.h"
#include "ctl/jsonc_edit.h"
#include "ctl/text_position.h"
#include "ctl/yaml_document.h"

namespace mcpctl {

namespace {

using nlohmann::json;

enum class YamlShape { goose, continue_list };

bool uses_anchors(const YamlNode& node) {
    if (node.anchored) return true;
    for (const YamlNode& item : node.items)
        if (uses_anchors(item)) return true;
    for (const auto& [key, value] : node.members)
        if (uses_anchors(key) || uses_anchors(value)) return true;
    return false;
}

// A goose extension in the mcpServers shape; `left` says why it is no server mcpd can run.
json goose_entry(const json& value, std::string& left) {
    json entry = json::object();
    const std::string type = value.value("type", json("stdio")).is_string()
                                 ? value.value("type", std::string("stdio"))
                                 : std::string();
    if (type == "sse" || type == "streamable_http") {
        entry["url"] = value.value("uri", json(type));
        return entry;
    }
    if (type != "stdio") {
        left = "goose's own extension (type ";
        left += type;
        left += "), not a server command";
        return entry;
    }
    // YAML 1.1 readers also take False and FALSE for false.
    const json enabled = value.contains("enabled") ? value["enabled"] : json();
    if (enabled == "false" || enabled == "False" || enabled == "FALSE") {
        left = "it is turned off in the file (enabled: false)";
        return entry;
    }
    if (value.contains("env_keys") && value["env_keys"].is_array() && !value["env_keys"].empty()) {
        left =
            "its env_keys are secrets goose keeps in its keyring, which mcpd cannot read; move "
            "them to envs to adopt it";
        return entry;
    }
    if (value.contains("cmd")) entry["command"] = value["cmd"];
    if (value.contains("args") && !value["args"].is_null()) entry["args"] = value["args"];
    if (value.contains("envs") && value["envs"].is_object()) entry["env"] = value["envs"];
    return entry;
}

// A Continue entry in the mcpServers shape.
json continue_entry(const json& value) {
    json entry = json::object();
    for (const char* key : {"type", "url", "command", "args", "env", "cwd"})
        if (value.contains(key) && !value[key].is_null()) entry[key] = value[key];
    if (entry.contains("type") && entry["type"] == "stdio") entry.erase("type");
    return entry;
}

std::string connect_flow(std::string_view name) {
    std::string out = "[\"connect\", ";
    out += json_quote(name);
    out += ']';
    return out;
}

class YamlEditor {
public:
    explicit YamlEditor(std::string_view text) : text_(text), positions_(text) {}

    // Why `entry` cannot be made to run `mcpctl connect NAME` in place, or empty, with the
    // edits added.
    std::string rewrite(const YamlNode& entry, YamlShape shape, std::string_view name,
                        std::vector<TextEdit>& edits) const {
        const char* command_key = shape == YamlShape::goose ? "cmd" : "command";
        const YamlNode* command = entry.get(command_key);
        if (command == nullptr) return "it has no command";
        edits.push_back({command->begin, command->end, "mcpctl"});
        if (const YamlNode* args = entry.get("args");
            args != nullptr && args->kind != YamlNode::Kind::scalar) {
            if (args->flow) {
                edits.push_back({args->begin, args->end, connect_flow(name)});
            } else {
                const std::size_t line = positions_.line_begin(args->begin);
                if (!starts_line(text_, args->begin))
                    return "its args list starts on a line it shares, which cannot be rewritten "
                           "in place";
                std::string items = "- connect\n";
                items += text_.substr(line, args->begin - line);
                items += "- ";
                items += json_quote(name);
                edits.push_back({args->begin, args->end, std::move(items)});
            }
        } else if (args != nullptr || entry.flow) {
            const std::size_t at = args ? args->begin : command->end;
            std::string added = args ? "" : ", args: ";
            added += connect_flow(name);
            edits.push_back({at, args ? args->end : at, std::move(added)});
        } else {
            const YamlNode& key = key_of(entry, command_key);
            std::string added(starts_line(text_, key.begin)
                                  ? text_.substr(positions_.line_begin(key.begin),
                                                 key.begin - positions_.line_begin(key.begin))
                                  : std::string(key.begin - positions_.line_begin(key.begin), ' '));
            added += "args: ";
            added += connect_flow(name);
            added += '\n';
            const std::size_t next = positions_.next_line(command->end);
            if (next == text_.size() && !text_.ends_with('\n')) added.insert(0, "\n");
            edits.push_back({next, next, std::move(added)});
        }
        if (shape == YamlShape::goose) {
            const YamlNode* envs = entry.get("envs");
            if (envs != nullptr && envs->kind == YamlNode::Kind::mapping && !envs->members.empty())
                edits.push_back({key_of(entry, "envs").end, envs->end, ": {}"});
            return {};
        }
        for (const char* key : {"env", "cwd"}) {
            const YamlNode* value = entry.get(key);
            if (value == nullptr) continue;
            const YamlNode& name_node = key_of(entry, key);
            if (entry.flow || !starts_line(text_, name_node.begin))
                return std::string("its ").append(key).append(
                    " shares a line with other keys, which cannot be taken out in place");
            edits.push_back({positions_.line_begin(name_node.begin),
                             positions_.next_line(std::max(value->end, name_node.end) - 1), ""});
        }
        return {};
    }

private:
    static const YamlNode& key_of(const YamlNode& entry, std::string_view key) {
        for (const auto& [name, value] : entry.members)
            if (name.value == key) return name;
        return entry;  // not reached: the callers found the key's value
    }

    std::string_view text_;
    TextPositions positions_;
};

// Where the entry is in the document, for the check of the edited text.
struct Adopted {
    json::json_pointer pointer;
    std::string name;
};

bool edited_as_planned(json before, std::string_view edited, YamlShape shape,
                       const std::vector<Adopted>& adopted) {
    mcpd::Result<YamlNode> after = parse_yaml(edited);
    if (!after) return false;
    // A document whose JSON view lacks an entry where the YAML had it (repeated keys fold into
    // one) or holds it as another type cannot be checked: it is left as it is.
    try {
        for (const Adopted& entry : adopted) {
            json& value = before.at(entry.pointer);
            if (!value.is_object()) return false;
            value[shape == YamlShape::goose ? "cmd" : "command"] = "mcpctl";
            value["args"] = json::array({"connect", entry.name});
            if (shape == YamlShape::goose) {
                if (value.contains("envs") && value["envs"].is_object())
                    value["envs"] = json::object();
            } else {
                value.erase("env");
                value.erase("cwd");
            }
        }
    } catch (const json::exception&) {
        return false;
    }
    return before == yaml_to_json(after.value());
}

}  // namespace

mcpd::Result<AdoptPlan> plan_adopt_yaml(std::string_view text, const AdoptOptions& options) {
    mcpd::Result<YamlNode> parsed = parse_yaml(text);
    if (!parsed) return parsed.failure();
    const YamlNode& doc = parsed.value();
    AdoptPlan plan;
    plan.text = std::string(text);
    const YamlNode* extensions = doc.get("extensions");
    const YamlNode* list = doc.get("mcpServers");
    YamlShape shape = YamlShape::goose;
    if (extensions != nullptr && extensions->kind == YamlNode::Kind::mapping)
        shape = YamlShape::goose;
    else if (list != nullptr && list->kind == YamlNode::Kind::sequence)
        shape = YamlShape::continue_list;
    else
        return plan;
    plan.has_servers = true;
    plan.shape = shape == YamlShape::goose ? ImportShape::goose : ImportShape::continue_;
    if (!options.group.empty())
        return mcpd::permanent_failure(
            "--group rewrites JSON files only; adopt this YAML file without it");
    const json whole = yaml_to_json(doc);
    const YamlEditor editor(text);
    std::vector<TextEdit> edits;
    std::vector<Adopted> adopted;
    const std::size_t count =
        shape == YamlShape::goose ? extensions->members.size() : list->items.size();
    for (std::size_t i = 0; i < count; ++i) {
        const YamlNode& node =
            shape == YamlShape::goose ? extensions->members[i].second : list->items[i];
        const json value = yaml_to_json(node);
        // An item that is not a mapping has no name (json::value would throw on it).
        const json* named = value.is_object() && value.contains("name") ? &value["name"] : nullptr;
        std::string key = shape == YamlShape::goose ? extensions->members[i].first.value
                          : named != nullptr && named->is_string() ? named->get<std::string>()
                                                                   : std::string();
        if (key.empty()) key = std::string("entry ").append(std::to_string(i + 1));
        json::json_pointer pointer =
            shape == YamlShape::goose
                ? json::json_pointer("/extensions") / extensions->members[i].first.value
                : json::json_pointer("/mcpServers") / i;
        Entry entry;
        std::string left;
        if (node.kind != YamlNode::Kind::mapping) {
            entry.reason = "its entry is not a mapping";
        } else {
            const json shaped =
                shape == YamlShape::goose ? goose_entry(value, left) : continue_entry(value);
            if (left.empty() && uses_anchors(node))
                left = "it uses YAML anchors, aliases or tags, which cannot be rewritten in place";
            if (left.empty())
                entry = classify_entry(key, shaped);
            else
                entry.reason = std::move(left);
        }
        if (!admit_entry(entry, key, key, {&options.approval}, options, plan)) continue;
        std::vector<TextEdit> mine;
        if (std::string why = editor.rewrite(node, shape, entry.server.name, mine); !why.empty()) {
            plan.left.push_back({key, std::move(why)});
            std::erase_if(plan.servers, [&](const ImportedServer& server) {
                return server.original_name == key;
            });
            continue;
        }
        for (TextEdit& edit : mine) edits.push_back(std::move(edit));
        adopted.push_back({std::move(pointer), entry.server.name});
        plan.rewritten.push_back(key + ": runs 'mcpctl connect " + entry.server.name + "'");
    }
    if (edits.empty()) return plan;
    mcpd::Result<std::string> edited = apply_edits(text, std::move(edits));
    if (!edited) return mcpd::permanent_failure(edited.error());
    if (!edited_as_planned(whole, edited.value(), shape, adopted))
        return mcpd::permanent_failure(
            "its servers are written in a way mcpd cannot rewrite in place without changing "
            "other keys, so it is left as it is");
    plan.text = std::move(edited).value();
    plan.changed = plan.text != text;
    return plan;
}

}  // namespace mcpctl
