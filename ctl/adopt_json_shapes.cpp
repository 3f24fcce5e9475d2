#include "ctl/adopt_json_shapes.h"

#include <algorithm>

namespace mcpctl {

namespace {

using nlohmann::json;

std::string connect_args(std::string_view name) {
    std::string out = "[\"connect\", ";
    out += json_quote(name);
    out += ']';
    return out;
}

const JsonMember* last_of(const std::vector<JsonMember>& fields, std::string_view key) {
    const auto found = std::find_if(fields.rbegin(), fields.rend(),
                                    [&](const JsonMember& field) { return field.key == key; });
    return found == fields.rend() ? nullptr : &*found;
}

// Command and args of the object `object` replaced (`command_key` names its command), the
// members `drop` names removed.
mcpd::Result<mcpd::Done> rewrite_object(std::string_view text, JsonSpan object,
                                        std::string_view command_key, std::string_view name,
                                        std::initializer_list<std::string_view> drop,
                                        std::vector<TextEdit>& edits) {
    mcpd::Result<std::vector<JsonMember>> listed = object_members(text, object);
    if (!listed) return mcpd::permanent_failure(listed.error());
    const std::vector<JsonMember>& fields = listed.value();
    const JsonMember* command = last_of(fields, command_key);
    if (command == nullptr) return mcpd::permanent_failure("the entry has no command");
    edits.push_back({command->value.begin, command->value.end, "\"mcpctl\""});
    if (const JsonMember* args = last_of(fields, "args")) {
        edits.push_back({args->value.begin, args->value.end, connect_args(name)});
    } else {
        std::string insert = ",";
        if (starts_line(text, command->key_span.begin)) {
            insert += '\n';
            insert += line_indent(text, command->key_span.begin);
        } else {
            insert += ' ';
        }
        insert += "\"args\": " + connect_args(name);
        edits.push_back({command->value.end, command->value.end, std::move(insert)});
    }
    std::vector<bool> remove;
    for (const JsonMember& field : fields)
        remove.push_back(std::find(drop.begin(), drop.end(), field.key) != drop.end());
    for (TextEdit& edit : remove_members(text, fields, remove)) edits.push_back(std::move(edit));
    return mcpd::Done{};
}

json zed_entry(const json& value, std::string& left) {
    if (value.contains("source") && value["source"] == "extension") {
        left = "a Zed extension's server: the extension starts it, not a command in this file";
        return value;
    }
    if (value.contains("enabled") && value["enabled"] == false) {
        left = "it is turned off in the file (\"enabled\": false)";
        return value;
    }
    json out = json::object();
    for (const auto& [key, item] : value.items())
        if (key != "command" && key != "source" && key != "settings" && key != "enabled")
            out[key] = item;
    if (!value.contains("command")) return out;
    const json& command = value["command"];
    if (!command.is_object()) {
        out["command"] = command;
        return out;
    }
    if (command.contains("path")) out["command"] = command["path"];
    for (const char* key : {"args", "env"})
        if (command.contains(key)) out[key] = command[key];
    return out;
}

json opencode_entry(const json& value, std::string& left) {
    json out = json::object();
    if (value.contains("enabled") && value["enabled"] == false) {
        left = "it is turned off in the file (\"enabled\": false)";
        return out;
    }
    if (value.contains("type") && value["type"] != "local") {
        out["type"] = value["type"];
        if (value.contains("url")) out["url"] = value["url"];
        return out;
    }
    const json command = value.contains("command") ? value["command"] : json();
    if (!command.is_array() || command.empty() ||
        !std::all_of(command.begin(), command.end(), [](const json& w) { return w.is_string(); })) {
        left = "its command is not a list of strings";
        return out;
    }
    out["command"] = command[0];
    out["args"] = json(std::vector<json>(command.begin() + 1, command.end()));
    if (value.contains("environment")) out["env"] = value["environment"];
    return out;
}

}  // namespace

json normalized_entry(JsonShape shape, const json& value, std::string& left) {
    if (!value.is_object()) return value;
    switch (shape) {
        case JsonShape::zed:
            return zed_entry(value, left);
        case JsonShape::opencode:
            return opencode_entry(value, left);
        case JsonShape::mcp_servers:
            break;
    }
    return value;
}

mcpd::Result<mcpd::Done> rewrite_json_entry(std::string_view text, const JsonMember& member,
                                            JsonShape shape, std::string_view name,
                                            std::vector<TextEdit>& edits) {
    mcpd::Result<std::vector<JsonMember>> listed = object_members(text, member.value);
    if (!listed) return mcpd::permanent_failure(listed.error());
    const std::vector<JsonMember>& fields = listed.value();
    const JsonMember* command = last_of(fields, "command");
    if (command == nullptr)
        return mcpd::permanent_failure("the entry " + member.key + " has no command");
    if (shape == JsonShape::opencode) {
        std::string words = "[\"mcpctl\", \"connect\", ";
        words += json_quote(name);
        words += ']';
        edits.push_back({command->value.begin, command->value.end, std::move(words)});
        std::vector<bool> remove;
        for (const JsonMember& field : fields) remove.push_back(field.key == "environment");
        for (TextEdit& edit : remove_members(text, fields, remove))
            edits.push_back(std::move(edit));
        return mcpd::Done{};
    }
    if (shape == JsonShape::zed && text[command->value.begin] == '{')
        return rewrite_object(text, command->value, "path", name, {"env"}, edits);
    return rewrite_object(text, member.value, "command", name, {"env", "cwd"}, edits);
}

std::string connect_json_entry(std::string_view text, const JsonMember& like, JsonShape shape,
                               std::string_view name, bool typed) {
    std::vector<std::string> fields;
    if (shape == JsonShape::opencode) {
        fields.emplace_back("\"type\": \"local\"");
        std::string command = "\"command\": [\"mcpctl\", \"connect\", ";
        command += json_quote(name);
        command += ']';
        fields.push_back(std::move(command));
    } else {
        if (typed) fields.emplace_back("\"type\": \"stdio\"");
        fields.emplace_back("\"command\": \"mcpctl\"");
        fields.push_back("\"args\": " + connect_args(name));
    }
    const auto join_with = [&](std::string_view separator) {
        std::string out;
        for (std::size_t i = 0; i < fields.size(); ++i) {
            if (i != 0) out += separator;
            out += fields[i];
        }
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

}  // namespace mcpctl
