#include "config/registry_server.h"

#include <array>
#include <climits>
#include <system_error>

#include "config/enum_names.h"
#include "config/env_file.h"
#include "config/registry_group.h"
#include "config/registry_sandbox.h"
#include "config/text_file.h"

namespace mcpd::config {

namespace {

namespace fs = std::filesystem;

// State shared by the field readers of one server table.
struct ServerReader {
    ServerConfig& server;
    const fs::path& base_dir;
    Diagnostics& diag;
    bool restart_delay_valid = true;
    const toml::node* restart_delay_max = nullptr;  // set when given and valid
    const toml::node* sharing = nullptr;            // set when given
};

using FieldReader = void (*)(const toml::node& value, std::string_view key, ServerReader& r);

struct Field {
    std::string_view key;
    FieldReader read;
};

template <typename T, typename U>
void assign(T& target, std::optional<U> value) {
    if (value) target = std::move(*value);
}

// `text` as an absolute, normalised path, relative ones taken from `base_dir`.
std::string resolve_path(const fs::path& base_dir, std::string_view text) {
    fs::path path(text);
    if (path.is_relative()) path = base_dir / path;
    std::string normal = path.lexically_normal().string();
    if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
    return normal;
}

void read_command(const toml::node& value, std::string_view key, ServerReader& r) {
    auto command = read_string(value, key, r.diag);
    if (command && command->empty()) {
        r.diag.error(value.source(),
                     "expected a program name or path for 'command', got an "
                     "empty string");
        return;
    }
    assign(r.server.command, std::move(command));
}

// The `env` table: variable names checked at their key, values at their value.
void read_env(const toml::node& value, std::string_view key, ServerReader& r) {
    const auto* table = value.as_table();
    if (!table) {
        r.diag.error(value.source(), "expected a table of strings for '" + std::string(key) +
                                         "', got " + std::string(type_name(value)));
        return;
    }
    for (const auto& [name, node] : entries_in_file_order(*table)) {
        if (!is_env_name(name->str())) {
            r.diag.error(name->source(),
                         "invalid environment variable name " + in_quotes(name->str()) +
                             " in 'env': use letters, digits and '_', not starting with a digit");
            continue;
        }
        const std::string var(name->str());
        assign(r.server.env[var], read_string(*node, "env." + var, r.diag));
    }
}

// The `env_file`: read now, so a missing or malformed file is a load error. Messages name
// the file and line, never a value.
void read_env_file(const toml::node& value, std::string_view key, ServerReader& r) {
    const auto text = read_string(value, key, r.diag);
    if (!text) return;
    if (text->empty()) {
        r.diag.error(value.source(), "expected a file path for 'env_file', got an empty string");
        return;
    }
    if (text->starts_with("~/")) {
        // The user's own file, read as that user when a child starts (daemon/managed_server).
        r.server.env_file = *text;
        return;
    }
    const std::string path = resolve_path(r.base_dir, *text);
    std::string contents;
    if (const int error = read_text_file(path, contents); error != 0) {
        r.diag.error(value.source(),
                     "cannot read env_file " + in_quotes(path) + ": " + text_file_error(error));
        return;
    }
    EnvFileResult parsed = parse_env_file(contents);
    for (const EnvFileError& error : parsed.errors) {
        r.diag.error_in(
            path, error.line, error.column,
            "malformed line in env_file of server '" + r.server.name + "': " + error.message);
    }
    r.server.env_file = path;
    r.server.env_file_vars = std::move(parsed.vars);
}

void read_cwd(const toml::node& value, std::string_view key, ServerReader& r) {
    const auto text = read_string(value, key, r.diag);
    if (!text) return;
    if (text->empty()) {
        r.diag.error(value.source(), "expected a directory path for 'cwd', got an empty string");
        return;
    }
    if (text->find(kProjectPlaceholder) != std::string::npos) {
        // A directory of each project's (sharing = "project"): it exists only once a session
        // names its project, so it is checked when the child starts.
        if (!text->starts_with(kProjectPlaceholder) && !text->starts_with('/')) {
            r.diag.error(value.source(),
                         "cwd " + in_quotes(*text) + " must start with {project} or '/'");
            return;
        }
        r.server.cwd = *text;
        return;
    }
    const std::string path = resolve_path(r.base_dir, *text);
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error) {
        r.diag.error(value.source(), "cwd " + in_quotes(path) +
                                         " is not an existing directory: " + error.message());
        return;
    }
    if (!fs::is_directory(status)) {
        r.diag.error(value.source(), "cwd " + in_quotes(path) + " is not a directory");
        return;
    }
    r.server.cwd = path;
}

void read_sharing(const toml::node& value, std::string_view key, ServerReader& r) {
    r.sharing = &value;
    assign(r.server.sharing, read_enum<Sharing>(value, key, kSharingNames, r.diag));
}

void read_era(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.era, read_enum<Era>(value, key, kEraNames, r.diag));
}

void read_replay(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.replay, read_enum<Replay>(value, key, kReplayNames, r.diag));
}

void read_restart(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.restart, read_enum<RestartPolicy>(value, key, kRestartPolicyNames, r.diag));
}

void read_autostart(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.autostart, read_bool(value, key, r.diag));
}

template <Duration ServerConfig::*member, bool allow_zero>
void read_duration_field(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.*member, read_duration(value, key, allow_zero, r.diag));
}

void read_restart_delay(const toml::node& value, std::string_view key, ServerReader& r) {
    const auto delay = read_duration(value, key, false, r.diag);
    r.restart_delay_valid = delay.has_value();
    assign(r.server.restart_delay, delay);
}

void read_restart_delay_max(const toml::node& value, std::string_view key, ServerReader& r) {
    const auto delay = read_duration(value, key, false, r.diag);
    if (delay) r.restart_delay_max = &value;
    assign(r.server.restart_delay_max, delay);
}

constexpr std::string_view kStartLimitKeys[] = {"burst", "interval"};

void read_start_limit(const toml::node& value, std::string_view key, ServerReader& r) {
    const auto* table = value.as_table();
    if (!table) {
        r.diag.error(value.source(),
                     "expected a table like { burst = 5, interval = \"60s\" } for '" +
                         std::string(key) + "', got " + std::string(type_name(value)));
        return;
    }
    StartLimit& limit = r.server.start_limit;
    for (const auto& [name, node] : entries_in_file_order(*table)) {
        if (name->str() == "burst") {
            assign(limit.burst, read_integer(*node, "start_limit.burst", 1, UINT_MAX, r.diag));
        } else if (name->str() == "interval") {
            assign(limit.interval, read_duration(*node, "start_limit.interval", false, r.diag));
        } else {
            const std::string hint = did_you_mean(name->str(), kStartLimitKeys);
            r.diag.error(name->source(),
                         "unknown key '" + std::string(name->str()) +
                             "' in 'start_limit' of server '" + r.server.name + "'" +
                             (hint.empty() ? "; expected 'burst' or 'interval'" : hint));
        }
    }
}

void read_lazy(const toml::node& value, std::string_view key, ServerReader& r) {
    if (auto on = read_bool(value, key, r.diag)) r.server.lazy = *on;
}

void read_request_log(const toml::node& value, std::string_view key, ServerReader& r) {
    if (auto on = read_bool(value, key, r.diag)) r.server.request_log = *on;
}

void read_max_sessions(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.max_sessions, read_integer(value, key, 0, UINT_MAX, r.diag));
}

void read_max_children(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.max_children, read_integer(value, key, 0, UINT_MAX, r.diag));
}

void read_max_children_per_user(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.max_children_per_user, read_integer(value, key, 0, UINT_MAX, r.diag));
}

void read_args(const toml::node& value, std::string_view key, ServerReader& r) {
    assign(r.server.args, read_string_array(value, key, r.diag));
}

// `roots`: each an absolute path or a file:// URI, checked at its own position.
void read_roots(const toml::node& value, std::string_view key, ServerReader& r) {
    auto roots = read_string_array(value, key, r.diag);
    if (!roots) return;
    bool valid = true;
    const toml::array& array = *value.as_array();
    for (std::size_t i = 0; i < roots->size(); ++i) {
        const std::string& root = (*roots)[i];
        if (root.starts_with('/') || root.starts_with("file://")) continue;
        r.diag.error(
            array[i].source(),
            "expected an absolute path or a file:// URI in 'roots', got " + in_quotes(root));
        valid = false;
    }
    if (valid) r.server.roots = std::move(*roots);
}

// `allow_users` / `allow_groups`: names or numeric ids, none empty.
template <std::vector<std::string> ServerConfig::*member>
void read_principals(const toml::node& value, std::string_view key, ServerReader& r) {
    auto names = read_string_array(value, key, r.diag);
    if (!names) return;
    bool valid = true;
    const toml::array& array = *value.as_array();
    for (std::size_t i = 0; i < names->size(); ++i) {
        if (!(*names)[i].empty()) continue;
        r.diag.error(array[i].source(), "expected a name or a numeric id in '" + std::string(key) +
                                            "', got an empty string");
        valid = false;
    }
    if (valid) r.server.*member = std::move(*names);
}

void read_sandbox_field(const toml::node& value, std::string_view, ServerReader& r) {
    if (auto sandbox = read_sandbox(value, "server '" + r.server.name + "'", r.diag))
        r.server.sandbox = std::move(*sandbox);
}

// tools, exclude_tools, ...: globs, none empty.
void read_filter(const toml::node& value, std::string_view key, ServerReader& r) {
    read_filter_key(value, key, r.server.filters, r.diag);
}

constexpr Field kFields[] = {
    {"command", read_command},
    {"args", read_args},
    {"env", read_env},
    {"env_file", read_env_file},
    {"cwd", read_cwd},
    {"sharing", read_sharing},
    {"era", read_era},
    {"autostart", read_autostart},
    {"idle_timeout", read_duration_field<&ServerConfig::idle_timeout, true>},
    {"restart", read_restart},
    {"restart_delay", read_restart_delay},
    {"restart_delay_max", read_restart_delay_max},
    {"stable_after", read_duration_field<&ServerConfig::stable_after, true>},
    {"start_limit", read_start_limit},
    {"start_timeout", read_duration_field<&ServerConfig::start_timeout, false>},
    {"stop_grace", read_duration_field<&ServerConfig::stop_grace, true>},
    {"stop_timeout", read_duration_field<&ServerConfig::stop_timeout, true>},
    {"request_timeout", read_duration_field<&ServerConfig::request_timeout, true>},
    {"replay", read_replay},
    {"health_interval", read_duration_field<&ServerConfig::health_interval, true>},
    {"max_sessions", read_max_sessions},
    {"max_children", read_max_children},
    {"max_children_per_user", read_max_children_per_user},
    {"request_log", read_request_log},
    {"lazy", read_lazy},
    {"roots", read_roots},
    {"sandbox", read_sandbox_field},
    {"allow_users", read_principals<&ServerConfig::allow_users>},
    {"allow_groups", read_principals<&ServerConfig::allow_groups>},
    {"tools", read_filter},
    {"exclude_tools", read_filter},
    {"prompts", read_filter},
    {"exclude_prompts", read_filter},
    {"resources", read_filter},
    {"exclude_resources", read_filter},
};

constexpr auto kServerKeys = [] {
    std::array<std::string_view, std::size(kFields)> keys{};
    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = kFields[i].key;
    return keys;
}();

const Field* find_field(std::string_view key) {
    for (const Field& field : kFields) {
        if (field.key == key) return &field;
    }
    return nullptr;
}

void report_unknown_key(const toml::key& key, const ServerConfig& server, Diagnostics& diag) {
    std::string message =
        "unknown key '" + std::string(key.str()) + "' in server '" + server.name + "'";
    const std::string hint = did_you_mean(key.str(), kServerKeys);
    if (hint.empty()) {
        message += "; a server takes ";
        for (std::size_t i = 0; i < kServerKeys.size(); ++i) {
            message += (i == 0 ? "" : ", ") + std::string(kServerKeys[i]);
        }
    }
    diag.error(key.source(), message + hint);
}

// Cross-key rule: the backoff cap may not be below the first delay. An absent cap follows
// a first delay above its default instead of failing.
void check_restart_delays(ServerReader& r) {
    ServerConfig& server = r.server;
    if (!r.restart_delay_valid || server.restart_delay_max >= server.restart_delay) return;
    if (!r.restart_delay_max) {
        server.restart_delay_max = server.restart_delay;
        return;
    }
    r.diag.error(r.restart_delay_max->source(), "'restart_delay_max' (" +
                                                    format_duration(server.restart_delay_max) +
                                                    ") must be at least 'restart_delay' (" +
                                                    format_duration(server.restart_delay) + ")");
}

// Cross-key rule: {project} is filled in only for sharing = "project"; anywhere else it would
// reach the server as those nine characters.
void check_project_placeholder(const toml::node& table, ServerReader& r) {
    const ServerConfig& server = r.server;
    if (server.sharing == Sharing::project) return;
    const auto holds = [](const std::string& text) {
        return text.find(kProjectPlaceholder) != std::string::npos;
    };
    std::string where;
    if (holds(server.cwd)) where = "cwd";
    for (const std::string& arg : server.args) {
        if (where.empty() && holds(arg)) where = "args";
    }
    for (const auto& [name, value] : server.env) {
        if (where.empty() && holds(value)) where = "env." + name;
    }
    if (where.empty()) return;
    r.diag.error(r.sharing != nullptr ? r.sharing->source() : table.source(),
                 "server '" + server.name + "' uses {project} in '" + where +
                     "', which only sharing = \"project\" fills in: set sharing = \"project\" "
                     "or write the directory itself");
}

}  // namespace

bool is_server_name(std::string_view name) {
    if (name.empty()) return false;
    for (const char c : name) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) return false;
    }
    return true;
}

std::span<const std::string_view> server_keys() {
    return kServerKeys;
}

std::optional<ServerConfig> read_server(const toml::key& key, const toml::node& node,
                                        const fs::path& base_dir, Diagnostics& diag) {
    ServerConfig server;
    server.name = std::string(key.str());
    if (!is_server_name(server.name)) {
        diag.error(key.source(), "invalid server name " + in_quotes(server.name) +
                                     ": use only letters, digits, '_', '.' and '-'");
    }
    const auto* table = node.as_table();
    if (!table) {
        diag.error(node.source(), "expected a table for 'servers." + server.name + "', got " +
                                      std::string(type_name(node)));
        return std::nullopt;
    }
    if (!table->contains("command")) {
        diag.error(node.source(), "server '" + server.name +
                                      "' has no 'command': add command = \"<program to run>\"");
    }
    ServerReader reader{server, base_dir, diag};
    for (const auto& [field_key, value] : entries_in_file_order(*table)) {
        if (const Field* field = find_field(field_key->str())) {
            field->read(*value, field->key, reader);
        } else {
            report_unknown_key(*field_key, server, diag);
        }
    }
    check_restart_delays(reader);
    check_project_placeholder(node, reader);
    return server;
}

}  // namespace mcpd::config
