#include "config/registry.h"

#include <toml++/toml.h>

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <span>
#include <system_error>

#include "common/accounts.h"
#include "common/listen_address.h"
#include "config/enum_names.h"
#include "config/registry_group.h"
#include "config/registry_sandbox.h"
#include "config/registry_server.h"
#include "config/text_file.h"
#include "config/toml_reader.h"

namespace mcpd::config {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTopLevelKeys[] = {"daemon", "servers", "groups"};
constexpr std::string_view kDaemonKeys[] = {"socket",
                                            "socket_group",
                                            "socket_mode",
                                            "log_level",
                                            "max_message_bytes",
                                            "max_session_queue_bytes",
                                            "max_queued_output",
                                            "metrics_listen",
                                            "metrics_token_file",
                                            "request_log",
                                            "lazy",
                                            "control_idle_timeout",
                                            "max_owner_connections",
                                            "http_listen",
                                            "http_max_sessions_per_user",
                                            "http_session_idle_timeout",
                                            "http_request_timeout",
                                            "http_keepalive_interval",
                                            "http_replay_bytes",
                                            "sandbox"};
constexpr std::int64_t kMinMessageBytes = 1024;
// More than any descriptor limit the kernel allows (fs.nr_open is at most 2^30).
constexpr std::int64_t kMaxOwnerConnections = std::int64_t{1} << 30;

// The directory relative paths in the registry at `path` are resolved from.
fs::path base_directory(const std::string& path) {
    std::error_code error;
    fs::path absolute = fs::absolute(path.empty() ? fs::path(".") : fs::path(path), error);
    if (error) absolute = fs::path(path);
    return absolute.lexically_normal().parent_path();
}

std::string list_keys(std::span<const std::string_view> keys) {
    std::string text;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        text += (i == 0 ? "'" : i + 1 == keys.size() ? "' or '" : "', '");
        text += keys[i];
    }
    return text + "'";
}

// A group that exists on this machine, by name or number.
void read_socket_group(const toml::node& value, DaemonConfig& daemon, Diagnostics& diag) {
    const auto group = read_string(value, "socket_group", diag);
    if (!group) return;
    if (!accounts::gid_of(*group)) {
        diag.error(value.source(), "'socket_group' names no group on this machine: '" + *group +
                                       "' (create it with 'groupadd', or name an existing one)");
        return;
    }
    daemon.socket_group = *group;
}

// An octal mode as text ("0660"): read and write bits only, and the owner's always.
void read_socket_mode(const toml::node& value, DaemonConfig& daemon, Diagnostics& diag) {
    const auto text = read_string(value, "socket_mode", diag);
    if (!text) return;
    unsigned mode = 0;
    const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), mode, 8);
    if (text->empty() || ec != std::errc() || end != text->data() + text->size() ||
        (mode & ~0666U) != 0 || (mode & 0600U) != 0600U) {
        diag.error(value.source(),
                   "'socket_mode' must be an octal mode with read and write bits only, the "
                   "owner's included, such as \"0600\", \"0660\" or \"0666\"; got \"" +
                       *text + "\"");
        return;
    }
    daemon.socket_mode = mode;
}

// An address to serve metrics on: HOST:PORT, [V6]:PORT or PORT (common/listen_address.h).
void read_metrics_listen(const toml::node& value, DaemonConfig& daemon, Diagnostics& diag) {
    auto text = read_string(value, "metrics_listen", diag);
    if (!text) return;
    if (const auto address = parse_listen_address(*text); !address) {
        diag.error(value.source(), "'metrics_listen': " + address.error());
        return;
    }
    daemon.metrics_listen = std::move(*text);
}

// Where the HTTP front door listens: "unix:PATH" (absolute) or a TCP address
// (common/listen_address.h), each once.
void read_http_listen(const toml::node& value, DaemonConfig& daemon, Diagnostics& diag) {
    auto addresses = read_string_array(value, "http_listen", diag);
    if (!addresses) return;
    for (std::size_t i = 0; i < addresses->size(); ++i) {
        const std::string& address = (*addresses)[i];
        if (address.starts_with("unix:")) {
            const std::string path = address.substr(5);
            if (path.empty() || path.front() != '/' || path.size() > 100) {
                diag.error(value.source(), "'http_listen': '" + address +
                                               "' needs an absolute path of at most 100 bytes "
                                               "after 'unix:'");
                return;
            }
        } else if (const auto tcp = parse_listen_address(address); !tcp) {
            diag.error(value.source(), "'http_listen': " + tcp.error() +
                                           " (or 'unix:/PATH' for a unix socket)");
            return;
        }
        for (std::size_t j = 0; j < i; ++j) {
            if ((*addresses)[j] != address) continue;
            diag.error(value.source(), "'http_listen' names '" + address + "' twice");
            return;
        }
    }
    daemon.http_listen = std::move(*addresses);
}

// The output budget of all clients together cannot be less than one session may queue.
// Reported at whichever of the two keys the file sets (max_queued_output when both).
void check_queue_limits(const DaemonConfig& daemon, const toml::node* queued_output,
                        const toml::node* session_queue, Diagnostics& diag) {
    if (daemon.max_queued_output >= daemon.max_session_queue_bytes) return;
    const toml::node* where = queued_output != nullptr ? queued_output : session_queue;
    if (where == nullptr) return;
    diag.error(where->source(),
               "'max_queued_output' (" + std::to_string(daemon.max_queued_output) +
                   " bytes) must be at least 'max_session_queue_bytes' (" +
                   std::to_string(daemon.max_session_queue_bytes) +
                   " bytes): what all clients together may have queued cannot be less than "
                   "what one session may; raise max_queued_output or lower "
                   "max_session_queue_bytes");
}

// The bearer token's file, an absolute path (relative ones from the registry's directory).
// Its contents and mode are checked when mcpd serves the metrics (metrics_access).
void read_metrics_token_file(const toml::node& value, const fs::path& base_dir,
                             DaemonConfig& daemon, Diagnostics& diag) {
    const auto text = read_string(value, "metrics_token_file", diag);
    if (!text) return;
    if (text->empty()) {
        diag.error(value.source(),
                   "expected a file path for 'metrics_token_file', got an empty string");
        return;
    }
    fs::path path(*text);
    if (path.is_relative()) path = base_dir / path;
    daemon.metrics_token_file = path.lexically_normal().string();
}

// The metrics endpoint is never open to every local user: an address needs a token file.
void check_metrics_access(const DaemonConfig& daemon, const toml::node* listen, Diagnostics& diag) {
    if (listen == nullptr || daemon.metrics_listen.empty() || !daemon.metrics_token_file.empty())
        return;
    diag.error(listen->source(),
               "'metrics_listen' needs 'metrics_token_file': a file only mcpd's user may read "
               "(mode 0600) holding the token a scraper must send as \"Authorization: Bearer "
               "TOKEN\" (Prometheus: bearer_token_file); create one with 'openssl rand -hex 32 "
               "> FILE && chmod 600 FILE'");
}

void read_daemon(const toml::node& node, const fs::path& base_dir, DaemonConfig& daemon,
                 Diagnostics& diag) {
    const auto* table = node.as_table();
    if (!table) {
        diag.error(node.source(),
                   "expected a table for 'daemon', got " + std::string(type_name(node)));
        return;
    }
    const toml::node* queued_output = nullptr;
    const toml::node* session_queue = nullptr;
    const toml::node* listen = nullptr;
    for (const auto& [key, value] : entries_in_file_order(*table)) {
        const std::string_view name = key->str();
        if (name == "socket") {
            if (auto socket = read_string(*value, name, diag)) daemon.socket = std::move(*socket);
        } else if (name == "socket_group") {
            read_socket_group(*value, daemon, diag);
        } else if (name == "socket_mode") {
            read_socket_mode(*value, daemon, diag);
        } else if (name == "log_level") {
            if (auto level = read_enum<log::Level>(*value, name, log::kLevelNames, diag)) {
                daemon.log_level = *level;
            }
        } else if (name == "max_message_bytes") {
            if (auto bytes = read_integer(*value, name, kMinMessageBytes, INT64_MAX, diag)) {
                daemon.max_message_bytes = static_cast<std::size_t>(*bytes);
            }
        } else if (name == "max_session_queue_bytes") {
            if (auto bytes = read_integer(*value, name, kMinMessageBytes, INT64_MAX, diag)) {
                daemon.max_session_queue_bytes = static_cast<std::size_t>(*bytes);
                session_queue = value;
            }
        } else if (name == "max_queued_output") {
            if (auto bytes = read_integer(*value, name, kMinMessageBytes, INT64_MAX, diag)) {
                daemon.max_queued_output = static_cast<std::size_t>(*bytes);
                queued_output = value;
            }
        } else if (name == "metrics_listen") {
            read_metrics_listen(*value, daemon, diag);
            listen = value;
        } else if (name == "metrics_token_file") {
            read_metrics_token_file(*value, base_dir, daemon, diag);
        } else if (name == "request_log") {
            if (auto on = read_bool(*value, name, diag)) daemon.request_log = *on;
        } else if (name == "lazy") {
            if (auto on = read_bool(*value, name, diag)) daemon.lazy = *on;
        } else if (name == "control_idle_timeout") {
            if (auto timeout = read_duration(*value, name, false, diag))
                daemon.control_idle_timeout = *timeout;
        } else if (name == "max_owner_connections") {
            if (auto most = read_integer(*value, name, 1, kMaxOwnerConnections, diag))
                daemon.max_owner_connections = static_cast<std::size_t>(*most);
        } else if (name == "http_listen") {
            read_http_listen(*value, daemon, diag);
        } else if (name == "http_max_sessions_per_user") {
            if (auto most = read_integer(*value, name, 1, kMaxOwnerConnections, diag))
                daemon.http_max_sessions_per_user = static_cast<std::size_t>(*most);
        } else if (name == "http_session_idle_timeout") {
            if (auto timeout = read_duration(*value, name, false, diag))
                daemon.http_session_idle_timeout = *timeout;
        } else if (name == "http_request_timeout") {
            if (auto timeout = read_duration(*value, name, false, diag))
                daemon.http_request_timeout = *timeout;
        } else if (name == "http_keepalive_interval") {
            if (auto interval = read_duration(*value, name, false, diag))
                daemon.http_keepalive_interval = *interval;
        } else if (name == "http_replay_bytes") {
            if (auto bytes = read_integer(*value, name, 0, INT64_MAX, diag))
                daemon.http_replay_bytes = static_cast<std::size_t>(*bytes);
        } else if (name == "sandbox") {
            if (auto sandbox = read_sandbox(*value, "[daemon]", diag)) daemon.sandbox = *sandbox;
        } else {
            const std::string hint = did_you_mean(name, kDaemonKeys);
            diag.error(key->source(),
                       "unknown key '" + std::string(name) + "' in [daemon]" +
                           (hint.empty() ? "; expected " + list_keys(kDaemonKeys) : hint));
        }
    }
    check_queue_limits(daemon, queued_output, session_queue, diag);
    check_metrics_access(daemon, listen, diag);
}

void read_servers(const toml::node& node, const fs::path& base_dir, Registry& registry,
                  Diagnostics& diag) {
    const auto* table = node.as_table();
    if (!table) {
        diag.error(node.source(),
                   "expected a table for 'servers', got " + std::string(type_name(node)));
        return;
    }
    for (const auto& [key, value] : entries_in_file_order(*table)) {
        if (auto server = read_server(*key, *value, base_dir, diag)) {
            registry.servers.push_back(std::move(*server));
        }
    }
}

void read_groups(const toml::node& node, Registry& registry, Diagnostics& diag) {
    const auto* table = node.as_table();
    if (!table) {
        diag.error(node.source(),
                   "expected a table for 'groups', got " + std::string(type_name(node)));
        return;
    }
    for (const auto& [key, value] : entries_in_file_order(*table)) {
        if (auto group = read_group(*key, *value, diag))
            registry.groups.push_back(std::move(*group));
    }
}

void report_unknown_top_level(const toml::key& key, const toml::node& value, Diagnostics& diag) {
    const std::string what = value.is_table() ? "table" : "key";
    const std::string hint = did_you_mean(key.str(), kTopLevelKeys);
    diag.error(key.source(),
               "unknown top-level " + what + " '" + std::string(key.str()) + "'" +
                   (hint.empty() ? "; expected [daemon], [servers.<name>] or [groups.<name>] tables"
                                 : hint));
}

void read_registry(const toml::table& root, Registry& registry, Diagnostics& diag) {
    const fs::path base_dir = base_directory(registry.path);
    for (const auto& [key, value] : entries_in_file_order(root)) {
        if (key->str() == "daemon") {
            read_daemon(*value, base_dir, registry.daemon, diag);
        } else if (key->str() == "servers") {
            read_servers(*value, base_dir, registry, diag);
        } else if (key->str() == "groups") {
            read_groups(*value, registry, diag);
        } else {
            report_unknown_top_level(*key, *value, diag);
        }
    }
    check_groups(registry, root.get("groups"), root.get("servers"), diag);
    // Every entry says whether it is lazy, so that what runs it needs no [daemon] to know.
    for (ServerConfig& server : registry.servers) server.lazy = is_lazy(server, registry.daemon);
    // Likewise its sandbox: the daemon's defaults with its own rules on top.
    for (ServerConfig& server : registry.servers)
        server.sandbox = layered(registry.daemon.sandbox, server.sandbox);
}

}  // namespace

std::string_view to_string(RestartPolicy policy) {
    return name_of<RestartPolicy>(kRestartPolicyNames, policy);
}
std::string_view to_string(Sharing sharing) {
    return name_of<Sharing>(kSharingNames, sharing);
}
std::string_view to_string(Era era) {
    return name_of<Era>(kEraNames, era);
}
std::string_view to_string(Replay replay) {
    return name_of<Replay>(kReplayNames, replay);
}

const ServerConfig* Registry::find(std::string_view name) const {
    for (const ServerConfig& server : servers) {
        if (server.name == name) return &server;
    }
    return nullptr;
}

const GroupConfig* Registry::find_group(std::string_view name) const {
    for (const GroupConfig& group : groups) {
        if (group.name == name) return &group;
    }
    return nullptr;
}

std::string ConfigError::to_string() const {
    // Appended piece by piece: gcc 12 at -O3 takes `":" + std::to_string(n)` for an
    // overlapping copy (a false -Wrestrict).
    std::string text = file;
    if (line > 0) {
        text += ':';
        text += std::to_string(line);
        if (column > 0) {
            text += ':';
            text += std::to_string(column);
        }
    }
    text += ": ";
    text += message;
    return text;
}

LoadResult load_registry(const std::string& path) {
    std::string text;
    if (const int error = read_text_file(path, text); error != 0) {
        LoadResult result;
        result.errors.push_back(
            {path, 0, 0,
             "cannot read the registry file " + in_quotes(path) + ": " + text_file_error(error)});
        return result;
    }
    return parse_registry(text, path);
}

LoadResult parse_registry(std::string_view text, const std::string& path) {
    LoadResult result;
    try {
        Registry registry;
        registry.path = path;
        Diagnostics diag(path, result.errors);
        try {
            const toml::table root = toml::parse(text, std::string_view(path));
            read_registry(root, registry, diag);
        } catch (const toml::parse_error& error) {
            diag.error(error.source(), "invalid TOML: " + std::string(error.description()));
        }
        if (result.errors.empty()) result.registry = std::move(registry);
    } catch (const std::exception& error) {
        // Out of memory or a library surprise: still an answer, never an exception.
        result.registry.reset();
        result.errors.push_back(
            {path, 0, 0, std::string("cannot load the registry: ") + error.what()});
    }
    return result;
}

}  // namespace mcpd::config
