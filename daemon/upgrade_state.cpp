// The body of an upgrade's state, written and checked (upgrade_state.h).
#include "daemon/upgrade_state.h"

#include <charconv>
#include <limits>
#include <cstdio>
#include <optional>

#include "common/base64url.h"
#include "common/state_file.h"
#include "common/unique_fd.h"
#include "config/registry.h"
#include "daemon/server/supervisor.h"

namespace mcpd {

using nlohmann::json;

namespace {

// A supervisor that acts on nothing: what restoring a snapshot into it says is the check.
class ScratchEnvironment final : public SupervisorEnvironment {
public:
    TimePoint now() const override { return TimePoint{}; }
    Result<int> spawn() override { return permanent_failure("a scratch supervisor spawns nothing"); }
    void begin_handshake(EraMemory::Start) override {}
    bool fall_back_to_initialize() override { return false; }
    void send_health_ping() override {}
    void close_stdin() override {}
    void signal_group(int) override {}
    void abandon_pipes() override {}
    void pause_sessions(bool) override {}
    void fail_waiting(const std::string&) override {}
    void arm_timer(TimerKind, Duration) override {}
    void cancel_timer(TimerKind) override {}
    void state_changed(ServerState, ServerState) override {}
    void note(std::string_view) override {}
};

template <typename T>
bool read_field(const json& object, const char* key, T& out, std::string& error) {
    const auto it = object.find(key);
    bool ok = it != object.end();
    if (ok) {
        if constexpr (std::is_same_v<T, std::string>) ok = it->is_string();
        else if constexpr (std::is_same_v<T, bool>) ok = it->is_boolean();
        else if constexpr (std::is_unsigned_v<T>)
            ok = it->is_number_unsigned() &&
                 it->template get<std::uint64_t>() <= std::numeric_limits<T>::max();
        else
            ok = it->is_number_integer() &&
                 it->template get<std::int64_t>() >= std::numeric_limits<T>::min() &&
                 it->template get<std::int64_t>() <= std::numeric_limits<T>::max();
    }
    if (!ok) {
        if (error.empty()) error = std::string("its \"") + key + "\" is missing or of the wrong type";
        return false;
    }
    out = it->get<T>();
    return true;
}

}  // namespace

json to_json(const CarriedProcess& p) {
    return {{"pid", p.pid},
            {"tag", p.tag},
            {"stdin_fd", p.stdin_fd},
            {"stdout_fd", p.stdout_fd},
            {"stderr_fd", p.stderr_fd},
            {"begun_stdout", base64url_encode(p.begun_stdout)},
            {"begun_stderr", base64url_encode(p.begun_stderr)},
            {"next_id", p.next_id},
            {"initialize_result", p.initialize_result},
            {"protocol_version", p.protocol_version},
            {"modern", p.modern},
            {"abandoned", p.abandoned},
            {"idle_armed", p.idle_armed},
            {"logs", p.logs}};
}

Result<CarriedProcess> read_carried_process(const json& body) {
    if (!body.is_object()) return permanent_failure("a carried process is not an object");
    CarriedProcess p;
    std::string error;
    std::string begun_out, begun_err;
    read_field(body, "pid", p.pid, error);
    read_field(body, "tag", p.tag, error);
    read_field(body, "stdin_fd", p.stdin_fd, error);
    read_field(body, "stdout_fd", p.stdout_fd, error);
    read_field(body, "stderr_fd", p.stderr_fd, error);
    read_field(body, "begun_stdout", begun_out, error);
    read_field(body, "begun_stderr", begun_err, error);
    read_field(body, "next_id", p.next_id, error);
    read_field(body, "protocol_version", p.protocol_version, error);
    read_field(body, "modern", p.modern, error);
    read_field(body, "idle_armed", p.idle_armed, error);
    const auto result = body.find("initialize_result");
    if (error.empty() && (result == body.end() || !result->is_object()))
        error = "its \"initialize_result\" is missing or not an object";
    if (error.empty()) p.initialize_result = *result;
    for (const char* key : {"abandoned", "logs"}) {
        const auto list = body.find(key);
        if (!error.empty()) break;
        if (list == body.end() || !list->is_array()) {
            error = std::string("its \"") + key + "\" is missing or not an array";
            break;
        }
        for (const json& item : *list) {
            if (std::string_view(key) == "abandoned" && item.is_number_unsigned())
                p.abandoned.push_back(item.get<std::uint64_t>());
            else if (std::string_view(key) == "logs" && item.is_string())
                p.logs.push_back(item.get<std::string>());
            else
                error = std::string("an item of its \"") + key + "\" is of the wrong type";
        }
    }
    if (error.empty()) {
        const std::optional<std::string> out = base64url_decode(begun_out);
        const std::optional<std::string> err = base64url_decode(begun_err);
        if (!out || !err) error = "a begun line is not base64url";
        else {
            p.begun_stdout = *out;
            p.begun_stderr = *err;
        }
    }
    const auto descriptor = [](int fd) { return fd >= 3 && fd < (1 << 20); };
    if (error.empty() && (!descriptor(p.stdin_fd) || !descriptor(p.stdout_fd) ||
                          !descriptor(p.stderr_fd) || p.stdin_fd == p.stdout_fd ||
                          p.stdin_fd == p.stderr_fd || p.stdout_fd == p.stderr_fd))
        error = "its pipes are not three descriptors above stdio";
    if (error.empty() && p.pid <= 1) error = "its pid is not a process mcpd could have run";
    if (!error.empty()) return permanent_failure("a carried process: " + error);
    return p;
}

json to_json(const UpgradeState& state) {
    json http = json::array();
    for (const auto& [address, fd] : state.http_listeners)
        http.push_back({{"address", address}, {"fd", fd}});
    json servers = json::array();
    for (const CarriedServer& server : state.servers)
        servers.push_back({{"name", server.name},
                           {"supervisor", server.supervisor},
                           {"process", server.process ? to_json(*server.process) : json()}});
    return {{"mcpd_version", state.mcpd_version},
            {"pid", state.pid},
            {"config", state.config_path},
            {"socket", state.socket_path},
            {"listening", state.listening_path},
            {"socket_activated", state.socket_activated},
            {"control_fd", state.control_fd},
            {"keeper_pid", state.keeper_pid},
            {"keeper_fd", state.keeper_fd},
            {"http_listeners", http},
            {"metrics_listener", state.metrics_listener
                                     ? json{{"address", state.metrics_listener->first},
                                            {"fd", state.metrics_listener->second}}
                                     : json()},
            {"uptime_ms", state.uptime_ms},
            {"upgrades", state.upgrades},
            {"servers", std::move(servers)}};
}

std::vector<pid_t> carried_groups(const UpgradeState& state) {
    std::vector<pid_t> groups;
    for (const CarriedServer& server : state.servers)
        if (server.process) groups.push_back(server.process->pid);
    return groups;
}

Result<UpgradeState> parse_upgrade_state(const json& body) {
    UpgradeState out;
    std::string error;
    read_field(body, "mcpd_version", out.mcpd_version, error);
    read_field(body, "pid", out.pid, error);
    read_field(body, "config", out.config_path, error);
    read_field(body, "socket", out.socket_path, error);
    read_field(body, "listening", out.listening_path, error);
    read_field(body, "socket_activated", out.socket_activated, error);
    read_field(body, "control_fd", out.control_fd, error);
    read_field(body, "keeper_pid", out.keeper_pid, error);
    read_field(body, "keeper_fd", out.keeper_fd, error);
    read_field(body, "uptime_ms", out.uptime_ms, error);
    read_field(body, "upgrades", out.upgrades, error);
    if (const auto http = body.find("http_listeners"); error.empty()) {
        if (http == body.end() || !http->is_array()) {
            error = "its \"http_listeners\" is missing or not an array";
        } else {
            for (const json& listener : *http) {
                std::string address;
                int fd = -1;
                if (!listener.is_object() || !read_field(listener, "address", address, error) ||
                    !read_field(listener, "fd", fd, error))
                    break;
                if (address.empty() || address.size() > 4096 || fd < 3 || fd >= (1 << 20) ||
                    fd == out.control_fd || fd == out.keeper_fd) {
                    error = "an HTTP listener is not an address with a descriptor of its own";
                    break;
                }
                out.http_listeners.emplace_back(std::move(address), fd);
            }
        }
    }
    if (const auto metrics = body.find("metrics_listener"); error.empty()) {
        std::string address;
        int fd = -1;
        if (metrics == body.end()) {
            error = "its \"metrics_listener\" is missing";
        } else if (!metrics->is_null()) {
            if (metrics->is_object() && read_field(*metrics, "address", address, error) &&
                read_field(*metrics, "fd", fd, error)) {
                bool shared = fd == out.control_fd || fd == out.keeper_fd;
                for (const auto& [http_address, http_fd] : out.http_listeners) shared |= fd == http_fd;
                if (address.empty() || address.size() > 4096 || fd < 3 || fd >= (1 << 20) || shared)
                    error = "its metrics listener is not an address with a descriptor of its own";
                else
                    out.metrics_listener.emplace(std::move(address), fd);
            } else if (error.empty()) {
                error = "its \"metrics_listener\" is neither an object nor null";
            }
        }
    }
    const auto servers = body.find("servers");
    if (error.empty() && (servers == body.end() || !servers->is_array()))
        error = "its \"servers\" is missing or not an array";
    // Descriptors are small numbers above stdio; a keeper is a pid or none.
    if (error.empty() && (out.control_fd < 3 || out.control_fd > 1 << 20))
        error = "its \"control_fd\" is not a descriptor mcpd could have kept";
    if (error.empty() && (out.keeper_pid != -1 || out.keeper_fd != -1) &&
        (out.keeper_pid < 2 || out.keeper_fd < 3 || out.keeper_fd > 1 << 20 ||
         out.keeper_fd == out.control_fd))
        error = "its keeper is neither a process with a pipe nor none";
    if (!error.empty()) return permanent_failure("the state cannot be taken: " + error);
    for (const json& entry : *servers) {
        CarriedServer server;
        if (!entry.is_object() || !read_field(entry, "name", server.name, error) ||
            !entry.contains("supervisor"))
            return permanent_failure("the state cannot be taken: a server in it has no name or "
                                     "no supervisor state");
        server.supervisor = entry["supervisor"];
        const auto process = entry.find("process");
        if (process == entry.end())
            return permanent_failure("the state cannot be taken: server '" + server.name +
                                     "' has no \"process\"");
        if (!process->is_null()) {
            Result<CarriedProcess> carried = read_carried_process(*process);
            if (!carried)
                return permanent_failure("the state cannot be taken: server '" + server.name +
                                         "': " + carried.error());
            if (server.supervisor.value("pid", json()) != carried->pid)
                return permanent_failure("the state cannot be taken: server '" + server.name +
                                         "': its process is not the one its supervisor ran");
            server.process = std::move(carried).value();
        } else if (server.supervisor.value("state", json()) == "running") {
            return permanent_failure("the state cannot be taken: server '" + server.name +
                                     "' is running without its process");
        }
        ScratchEnvironment scratch;
        config::ServerConfig config;
        config.name = server.name;
        Supervisor supervisor(config, scratch);
        const Result<Done> restored = supervisor.restore(server.supervisor);
        if (!restored)
            return permanent_failure("the state cannot be taken: server '" + server.name +
                                     "': " + restored.error());
        out.servers.push_back(std::move(server));
    }
    return out;
}

namespace {

std::optional<int> descriptor_number(const std::string& text) {
    int fd = -1;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), fd);
    if (error != std::errc() || end != text.data() + text.size() || fd < 0) return std::nullopt;
    return fd;
}

// The state in `fd`, decoded and its body checked.
Result<UpgradeState> load(int fd, state_file::Decoded& decoded) {
    const Result<std::string> text = state_file::read_all(fd);
    if (!text) return text.failure();
    Result<state_file::Decoded> read = state_file::decode(text.value());
    if (!read) return read.failure();
    decoded = std::move(read).value();
    return parse_upgrade_state(decoded.body);
}

}  // namespace

int check_state_command(const std::string& fd_text) {
    const std::optional<int> fd = descriptor_number(fd_text);
    if (!fd) {
        std::fprintf(stderr, "mcpd: --check-state needs a descriptor number, not '%s'\n",
                     fd_text.c_str());
        return 2;
    }
    state_file::Decoded decoded;
    const Result<UpgradeState> state = load(*fd, decoded);
    if (!state) {
        std::fprintf(stderr, "mcpd: %s\n", state.error().c_str());
        return 1;
    }
    std::printf("%s\n", state_file::acknowledgement(decoded).c_str());
    return 0;
}

Result<UpgradeState> take_upgrade_state(const std::string& fd_text) {
    const std::optional<int> fd = descriptor_number(fd_text);
    if (!fd) return permanent_failure("--restore-state needs a descriptor number, not '" + fd_text + "'");
    const UniqueFd owned(*fd);
    state_file::Decoded decoded;
    return load(*fd, decoded);
}

std::vector<std::string> arguments_to_keep(const std::vector<std::string>& args) {
    std::vector<std::string> kept;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--restore-state") {
            ++i;  // and its value
            continue;
        }
        if (args[i].starts_with("--restore-state=")) continue;
        kept.push_back(args[i]);
    }
    return kept;
}

}  // namespace mcpd
