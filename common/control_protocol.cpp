#include "common/control_protocol.h"

#include "common/json_read.h"

#include <algorithm>

namespace mcpd::control {

using nlohmann::json;

namespace {

// The optional boolean `key`: `fallback` when absent; another type is a bad request naming
// the field and what it needs.
Result<bool> flag(const json& request, std::string_view key, bool fallback) {
    const json* value = json_read::member(request, key);
    if (value == nullptr) return fallback;
    if (value->is_boolean()) return value->get<bool>();
    // Appended piece by piece: gcc 12 at -O3 takes `"\"" + std::string(key)` for an
    // overlapping copy (a false -Wrestrict).
    std::string message = "\"";
    message += key;
    message += "\" must be true or false, not ";
    message += json_read::type_phrase(*value);
    return permanent_failure(std::move(message));
}

// The optional whole number `key`, 0 to `max`, likewise.
Result<std::int64_t> count(const json& request, std::string_view key, std::int64_t max,
                           std::int64_t fallback) {
    const json* value = json_read::member(request, key);
    if (value == nullptr) return fallback;
    const std::optional<std::int64_t> n = json_read::as_integer(*value);
    if (n && *n >= 0 && *n <= max) return *n;
    std::string message = "\"";  // piece by piece, as in flag()
    message += key;
    message += "\" must be a whole number from 0 to ";
    message += std::to_string(max);
    message += ", not ";
    message += n ? std::to_string(*n) : std::string(json_read::type_phrase(*value));
    return permanent_failure(std::move(message));
}

// The "servers" list: absent, null or empty is no names (refused unless `allow_empty`).
Result<std::vector<std::string>> server_names(const json& request, bool allow_empty) {
    const json* names = json_read::member(request, "servers");
    if (names != nullptr && !names->is_null() && !names->is_array())
        return permanent_failure("\"servers\" must be a list of names");
    if (names == nullptr || names->is_null() || names->empty()) {
        if (allow_empty) return std::vector<std::string>{};
        return permanent_failure("name at least one server");
    }
    std::vector<std::string> out;
    for (const json& name : *names) {
        if (!name.is_string()) return permanent_failure("server names must be strings");
        out.push_back(name.get<std::string>());
    }
    return out;
}

// The required string "server"; `missing` says what to name when it is not one.
Result<std::string> server_name(const json& request, std::string_view missing) {
    if (const std::string* name = json_read::string_at(request, "server")) return *name;
    return permanent_failure(std::string(missing));
}

}  // namespace

std::string_view to_string(Command command) {
    return name_of<Command>(kCommandNames, command);
}

std::optional<Command> command_named(std::string_view name) {
    return value_of<Command>(kCommandNames, name);
}

bool speaks_our_protocol(const json& request) {
    const json* version = json_read::member(request, "protocol");
    if (version == nullptr) return false;
    // Compared as the 64-bit value it was written as: get<int>() would cut 4294967297 to 1.
    const std::int64_t ours = kProtocolVersion;
    if (version->is_number_unsigned())
        return version->get<std::uint64_t>() == static_cast<std::uint64_t>(ours);
    if (version->is_number_integer()) return version->get<std::int64_t>() == ours;
    return false;
}

std::string protocol_mismatch(const json& request) {
    const json* version = json_read::member(request, "protocol");
    std::string message = "control protocol mismatch: mcpd speaks version ";
    message += std::to_string(kProtocolVersion);
    message += ", the client sent ";
    message += version == nullptr ? std::string("none") : version->dump();
    message += "; use an mcpctl from the same release as mcpd";
    return message;
}

json request(Command command) {
    return {{"protocol", kProtocolVersion}, {"command", to_string(command)}};
}

json to_json(const StatusRequest& r) {
    json out = request(Command::status);
    if (!r.servers.empty()) out["servers"] = r.servers;
    return out;
}

json to_json(const ActionRequest& r) {
    json out = request(r.command);
    out["servers"] = r.servers;
    out["wait"] = r.wait;
    if (r.wait) out["timeout_ms"] = r.timeout.count();
    return out;
}

json to_json(const ReloadRequest& r) {
    json out = request(Command::reload);
    if (r.allow_remove_all) out["allow_remove_all"] = true;
    return out;
}

json to_json(const UpgradeRequest& r) {
    json out = request(Command::upgrade);
    if (!r.binary.empty()) out["binary"] = r.binary;
    return out;
}

json to_json(const LogsRequest& r) {
    json out = request(Command::logs);
    out["server"] = r.server;
    out["lines"] = r.lines;
    out["follow"] = r.follow;
    return out;
}

json to_json(const AttachRequest& r) {
    json out = request(Command::attach);
    if (r.servers.empty()) {
        out["server"] = r.server;
    } else {
        out["servers"] = r.servers;
    }
    if (r.pass_fds) out["pass_fds"] = true;
    if (!r.cwd.empty()) out["cwd"] = r.cwd;
    return out;
}

json to_json(const SessionsRequest& r) {
    json out = request(Command::sessions);
    if (r.server) out["server"] = *r.server;
    return out;
}

json to_json(const StatsRequest& r) {
    json out = request(Command::stats);
    if (!r.servers.empty()) out["servers"] = r.servers;
    if (r.tools) out["tools"] = true;
    if (r.sessions) out["sessions"] = true;
    if (r.children) out["children"] = true;
    return out;
}

json to_json(const ClearCacheRequest& r) {
    json out = request(Command::clear_cache);
    if (!r.servers.empty()) out["servers"] = r.servers;
    return out;
}

json to_json(const HttpTokenRequest& r) {
    json out = request(Command::http_token);
    if (r.rotate) out["rotate"] = true;
    return out;
}

Result<StatusRequest> parse_status(const json& request) {
    Result<std::vector<std::string>> servers = server_names(request, true);
    if (!servers) return servers.failure();
    return StatusRequest{std::move(servers).value()};
}

Result<ActionRequest> parse_action(const json& request, Command command) {
    const Result<bool> wait = flag(request, "wait", false);
    if (!wait) return wait.failure();
    const Result<std::int64_t> timeout_ms =
        count(request, "timeout_ms", kMaxWait.count(), kDefaultWait.count());
    if (!timeout_ms) return timeout_ms.failure();
    Result<std::vector<std::string>> servers = server_names(request, false);
    if (!servers) return servers.failure();
    return ActionRequest{command, std::move(servers).value(), wait.value(),
                         std::chrono::milliseconds(timeout_ms.value())};
}

Result<ReloadRequest> parse_reload(const json& request) {
    const Result<bool> allow_remove_all = flag(request, "allow_remove_all", false);
    if (!allow_remove_all) return allow_remove_all.failure();
    return ReloadRequest{allow_remove_all.value()};
}

Result<UpgradeRequest> parse_upgrade(const json& request) {
    UpgradeRequest out;
    if (const auto it = request.find("binary"); it != request.end()) {
        if (!it->is_string() || it->get_ref<const std::string&>().empty() ||
            it->get_ref<const std::string&>().size() > kMaxBinaryPathBytes ||
            it->get_ref<const std::string&>().find('\0') != std::string::npos)
            return permanent_failure("\"binary\" must be a path of 1 to 4096 bytes");
        out.binary = it->get<std::string>();
    }
    return out;
}

Result<LogsRequest> parse_logs(const json& request) {
    Result<std::string> server = server_name(request, "name the server whose logs you want");
    if (!server) return server.failure();
    const Result<std::int64_t> lines = count(request, "lines", kMaxLogLines, kDefaultLogLines);
    if (!lines) return lines.failure();
    const Result<bool> follow = flag(request, "follow", false);
    if (!follow) return follow.failure();
    return LogsRequest{std::move(server).value(), lines.value(), follow.value()};
}

// "servers": the names of an ad-hoc group, each a server name, none twice.
Result<std::vector<std::string>> group_members(const json& list) {
    constexpr std::size_t kMaxMembers = 64;
    const auto invalid = [] {
        return permanent_failure("\"servers\" must be an array of 2 to 64 different server names");
    };
    if (!list.is_array() || list.size() < 2 || list.size() > kMaxMembers) return invalid();
    std::vector<std::string> names;
    for (const json& name : list) {
        if (!name.is_string() || name.get_ref<const std::string&>().empty()) return invalid();
        const std::string& text = name.get_ref<const std::string&>();
        if (text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") !=
                std::string::npos ||
            std::find(names.begin(), names.end(), text) != names.end())
            return invalid();
        names.push_back(text);
    }
    return names;
}

Result<AttachRequest> parse_attach(const json& request) {
    std::vector<std::string> members;
    if (const json* list = json_read::member(request, "servers")) {
        Result<std::vector<std::string>> parsed = group_members(*list);
        if (!parsed) return parsed.failure();
        members = std::move(parsed).value();
    }
    Result<std::string> server = server_name(request, "name the server to attach to");
    if (!members.empty()) {
        std::string joined;
        for (const std::string& name : members) joined += (joined.empty() ? "" : "+") + name;
        server = std::move(joined);
    }
    if (!server) return server.failure();
    const Result<bool> pass_fds = flag(request, "pass_fds", false);
    if (!pass_fds) return pass_fds.failure();
    std::string cwd;
    if (const json* given = json_read::member(request, "cwd")) {
        const std::string* text = given->is_string() ? given->get_ptr<const std::string*>() : nullptr;
        if (text == nullptr || !text->starts_with('/') || text->find('\0') != std::string::npos) {
            return permanent_failure(
                "\"cwd\" must be the client's working directory as an absolute path; leave it out "
                "when there is none");
        }
        cwd = *text;
    }
    return AttachRequest{std::move(server).value(), std::move(members), pass_fds.value(),
                         std::move(cwd)};
}

SessionsRequest parse_sessions(const json& request) {
    SessionsRequest out;
    if (const std::string* name = json_read::string_at(request, "server")) out.server = *name;
    return out;
}

Result<StatsRequest> parse_stats(const json& request) {
    Result<std::vector<std::string>> servers = server_names(request, true);
    if (!servers) return servers.failure();
    const Result<bool> tools = flag(request, "tools", false);
    if (!tools) return tools.failure();
    const Result<bool> sessions = flag(request, "sessions", false);
    if (!sessions) return sessions.failure();
    const Result<bool> children = flag(request, "children", false);
    if (!children) return children.failure();
    return StatsRequest{.servers = std::move(servers).value(),
                        .tools = tools.value(),
                        .sessions = sessions.value(),
                        .children = children.value()};
}

Result<ClearCacheRequest> parse_clear_cache(const json& request) {
    Result<std::vector<std::string>> servers = server_names(request, true);
    if (!servers) return servers.failure();
    return ClearCacheRequest{std::move(servers).value()};
}

Result<HttpTokenRequest> parse_http_token(const json& request) {
    const auto rotate = request.find("rotate");
    if (rotate != request.end() && !rotate->is_boolean())
        return permanent_failure("'rotate' must be true or false");
    return HttpTokenRequest{rotate != request.end() && rotate->get<bool>()};
}

json ok_reply(json result) {
    return {{"ok", true}, {"result", std::move(result)}};
}

json error_reply(std::string_view code, std::string_view message,
                 const std::vector<std::string>& details) {
    json error = {{"code", code}, {"message", message}};
    if (!details.empty()) error["details"] = details;
    return {{"ok", false}, {"error", std::move(error)}};
}

Result<Reply> parse_reply(const json& message) {
    if (!message.is_object()) return permanent_failure("not a JSON object");
    const std::optional<bool> ok = json_read::bool_at(message, "ok");
    if (!ok) return permanent_failure("no boolean \"ok\"");
    if (*ok) {
        const json* result = json_read::member(message, "result");
        return Reply{true, result != nullptr ? *result : json::object(), nullptr};
    }
    const json* error = json_read::object_at(message, "error");
    if (error == nullptr || json_read::string_at(*error, "message") == nullptr)
        return permanent_failure("\"ok\" is false but there is no error message");
    return Reply{false, nullptr, *error};
}

json version_result(std::string_view version, std::int64_t pid) {
    return {{"version", version}, {"protocol", kProtocolVersion}, {"pid", pid}};
}

json status_result(json daemon, json servers) {
    return {{"daemon", std::move(daemon)}, {"servers", std::move(servers)}};
}

json servers_result(json servers) {
    return {{"servers", std::move(servers)}};
}

json to_json(const ReloadResult& r) {
    return {{"added", r.added},
            {"removed", r.removed},
            {"changed", r.changed},
            {"unchanged", r.unchanged}};
}

json logs_result(const std::vector<std::string>& lines) {
    return {{"lines", lines}};
}

json clear_cache_result(std::size_t entries, const std::vector<ClearedCache>& servers) {
    json out = {{"entries", entries}};
    if (!servers.empty()) {
        json list = json::array();
        for (const ClearedCache& s : servers)
            list.push_back({{"name", s.server}, {"entries", s.entries}});
        out["servers"] = std::move(list);
    }
    return out;
}

json shutdown_result() {
    return json::object();
}

json to_json(const UpgradeResult& r) {
    return {{"binary", r.binary}, {"state_bytes", r.state_bytes}, {"upgrades", r.upgrades}};
}

json to_json(const AttachResult& r) {
    json out = {{"server", r.server}, {"session", r.session}};
    if (r.send_fds) out["send_fds"] = true;
    return out;
}

bool asks_for_fds(const json& attach_result) {
    return json_read::bool_at(attach_result, "send_fds").value_or(false);
}

json sessions_result(json sessions) {
    return {{"sessions", std::move(sessions)}};
}

json log_message(std::string_view line) {
    return {{"log", line}};
}

std::optional<std::string> log_line(const json& message) {
    const std::string* line = json_read::string_at(message, "log");
    if (line == nullptr) return std::nullopt;
    return *line;
}

json ended_message(const Ended& ended) {
    return {{"ended", {{"reason", ended.reason}, {"status", ended.by_client ? 0 : 1}}}};
}

std::optional<Ended> parse_ended(const json& message) {
    const json* ended = json_read::object_at(message, "ended");
    if (ended == nullptr) return std::nullopt;
    return Ended{json_read::string_or(*ended, "reason", ""),
                 json_read::integer_at(*ended, "status") == std::int64_t{0}};
}

}  // namespace mcpd::control
