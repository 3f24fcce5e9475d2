#include "ctl/adopt_toml.h"

#include <toml++/toml.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ctl/adopt_entries.h"
#include "ctl/jsonc_edit.h"
#include "ctl/text_position.h"

namespace mcpctl {

namespace {

using nlohmann::json;

// A TOML value as JSON, for classify_entry (dates and times as their text).
json to_json(const toml::node& node) {
    if (const toml::table* table = node.as_table()) {
        json out = json::object();
        for (const auto& [key, value] : *table) out[std::string(key.str())] = to_json(value);
        return out;
    }
    if (const toml::array* array = node.as_array()) {
        json out = json::array();
        for (const toml::node& item : *array) out.push_back(to_json(item));
        return out;
    }
    if (const auto text = node.value_exact<std::string>()) return *text;
    if (const auto flag = node.value_exact<bool>()) return *flag;
    if (const auto number = node.value_exact<int64_t>()) return *number;
    if (const auto number = node.value_exact<double>()) return *number;
    std::ostringstream out;
    node.visit([&](const auto& value) { out << value; });
    return out.str();
}

// A Codex entry in the mcpServers shape; `left` says why it cannot be adopted at all.
json codex_entry(const toml::table& table, std::string& left) {
    json entry = to_json(table);
    if (entry.contains("enabled") && entry["enabled"] == false)
        left = "it is turned off in the file (enabled = false)";
    else if (entry.contains("env_vars") && !entry["env_vars"].empty())
        left =
            "it passes variables from Codex's own environment (env_vars), which mcpd does not "
            "have";
    return entry;
}

std::string quoted_args(std::string_view name) {
    std::string out = "[\"connect\", ";
    out += toml_string(name);
    out += ']';
    return out;
}

class TomlEditor {
public:
    explicit TomlEditor(std::string_view text) : text_(text), positions_(text) {}

    JsonSpan span(const toml::source_region& region) const {
        return {positions_.byte_of(region.begin.line, region.begin.column),
                positions_.byte_of(region.end.line, region.end.column)};
    }

    // Why the entry `table` cannot be made to run `mcpctl connect NAME` in place, or empty, with
    // the edits added.
    std::string rewrite(const toml::table& table, std::string_view name,
                        std::vector<TextEdit>& edits) const {
        const toml::node* command = table.get("command");
        if (command == nullptr) return "it has no command";
        const JsonSpan command_span = span(command->source());
        edits.push_back({command_span.begin, command_span.end, "\"mcpctl\""});
        if (const toml::node* args = table.get("args")) {
            const JsonSpan args_span = span(args->source());
            edits.push_back({args_span.begin, args_span.end, quoted_args(name)});
        } else if (table.is_inline()) {
            std::string added = ", args = ";
            added += quoted_args(name);
            edits.push_back({command_span.end, command_span.end, std::move(added)});
        } else {
            const std::size_t line = positions_.line_begin(command_span.begin);
            std::string added(text_.substr(line, line_indent(text_, line).size()));
            added += "args = ";
            added += quoted_args(name);
            added += '\n';
            const std::size_t next = positions_.next_line(command_span.end);
            if (next == text_.size() && !text_.ends_with('\n')) added.insert(0, "\n");
            edits.push_back({next, next, std::move(added)});
        }
        for (const char* key : {"env", "cwd"}) {
            const toml::node* node = table.get(key);
            if (node == nullptr) continue;
            if (table.is_inline())
                return std::string("its table is written inline with ")
                    .append(key)
                    .append(", which cannot be taken out of it in place");
            remove_key(table, key, *node, edits);
        }
        return {};
    }

private:
    // The lines of `key` (and, for a table, of each of its keys and its [header]) removed.
    void remove_key(const toml::table& parent, std::string_view key, const toml::node& node,
                    std::vector<TextEdit>& edits) const {
        const toml::table* table = node.as_table();
        if (table == nullptr || table->is_inline()) {
            for (const auto& [name, value] : parent)
                if (name.str() == key) remove_lines(name.source(), value.source(), edits);
            return;
        }
        for (const auto& [name, value] : *table) remove_lines(name.source(), value.source(), edits);
        const std::size_t header = span(table->source()).begin;
        const std::size_t line = positions_.line_begin(header);
        if (text_.substr(line + line_indent(text_, line).size()).starts_with('['))
            edits.push_back({line, positions_.next_line(header), ""});
    }

    void remove_lines(const toml::source_region& key, const toml::source_region& value,
                      std::vector<TextEdit>& edits) const {
        const std::size_t begin = positions_.line_begin(span(key).begin);
        const JsonSpan value_span = span(value);
        edits.push_back(
            {begin, positions_.next_line(value_span.end - (value_span.size() ? 1 : 0)), ""});
    }

    std::string_view text_;
    TextPositions positions_;
};

// The text of a toml++ parse error, with its line.
std::string parse_error_text(const toml::parse_error& error) {
    std::string sentence = "not valid TOML: line ";
    sentence += std::to_string(error.source().begin.line);
    sentence += ": ";
    sentence += error.description();
    return sentence;
}

// Whether `edited` reads as `before` with the adopted entries changed as they should be.
bool edited_as_planned(toml::table before, std::string_view edited,
                       const std::vector<std::pair<std::string, std::string>>& adopted) {
    toml::table after;
    try {
        after = toml::parse(edited);
    } catch (const toml::parse_error&) {
        return false;
    }
    toml::table* servers = before["mcp_servers"].as_table();
    for (const auto& [key, name] : adopted) {
        toml::table* entry = servers ? (*servers)[key].as_table() : nullptr;
        if (entry == nullptr) return false;
        entry->insert_or_assign("command", "mcpctl");
        entry->insert_or_assign("args", toml::array{"connect", name});
        entry->erase("env");
        entry->erase("cwd");
    }
    return before == after;
}

}  // namespace

mcpd::Result<AdoptPlan> plan_adopt_toml(std::string_view text, const AdoptOptions& options) {
    toml::table doc;
    try {
        doc = toml::parse(text);
    } catch (const toml::parse_error& e) {
        return mcpd::permanent_failure(parse_error_text(e));
    }
    AdoptPlan plan;
    plan.text = std::string(text);
    const toml::table* servers = doc["mcp_servers"].as_table();
    plan.has_servers = servers != nullptr;
    plan.shape = ImportShape::codex;
    if (servers == nullptr) return plan;
    if (!options.group.empty())
        return mcpd::permanent_failure(
            "--group rewrites JSON files only; adopt this TOML file without it");
    // In the order written, not toml++'s order of keys.
    std::vector<std::pair<std::string, const toml::node*>> entries;
    for (const auto& [key, node] : *servers) entries.emplace_back(std::string(key.str()), &node);
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        const auto& x = a.second->source().begin;
        const auto& y = b.second->source().begin;
        return x.line != y.line ? x.line < y.line : x.column < y.column;
    });
    const TomlEditor editor(text);
    std::vector<TextEdit> edits;
    std::vector<std::pair<std::string, std::string>> adopted;
    for (const auto& [key, node] : entries) {
        Entry entry;
        std::string left;
        const toml::table* table = node->as_table();
        const json value = table ? codex_entry(*table, left) : to_json(*node);
        if (!left.empty())
            entry.reason = left;
        else
            entry = classify_entry(key, value);
        if (!admit_entry(entry, key, key, {&options.approval}, options, plan)) continue;
        std::vector<TextEdit> mine;
        if (std::string why = editor.rewrite(*table, entry.server.name, mine); !why.empty()) {
            plan.left.push_back({key, std::move(why)});
            // A named copy: clang 14 cannot capture a structured binding in a lambda.
            const std::string& dropped = key;
            plan.servers.erase(std::remove_if(plan.servers.begin(), plan.servers.end(),
                                              [&dropped](const ImportedServer& server) {
                                                  return server.original_name == dropped;
                                              }),
                               plan.servers.end());
            continue;
        }
        for (TextEdit& edit : mine) edits.push_back(std::move(edit));
        adopted.emplace_back(key, entry.server.name);
        plan.rewritten.push_back(key + ": runs 'mcpctl connect " + entry.server.name + "'");
    }
    if (edits.empty()) return plan;
    mcpd::Result<std::string> edited = apply_edits(text, std::move(edits));
    if (!edited) return mcpd::permanent_failure(edited.error());
    if (!edited_as_planned(doc, edited.value(), adopted))
        return mcpd::permanent_failure(
            "its servers are written in a way mcpd cannot rewrite in place without changing "
            "other keys (dotted keys or tables split across the file), so it is left as it is");
    plan.text = std::move(edited).value();
    plan.changed = plan.text != text;
    return plan;
}

}  // namespace mcpctl
