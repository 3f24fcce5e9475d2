// The body of an upgrade's state, written and checked (upgrade_state.h).
#include "daemon/upgrade_state.h"

#include <charconv>
#include <cstdio>
#include <optional>

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
        else if constexpr (std::is_unsigned_v<T>) ok = it->is_number_unsigned();
        else ok = it->is_number_integer();
    }
    if (!ok) {
        if (error.empty()) error = std::string("its \"") + key + "\" is missing or of the wrong type";
        return false;
    }
    out = it->get<T>();
    return true;
}

}  // namespace

json to_json(const UpgradeState& state) {
    json servers = json::array();
    for (const CarriedServer& server : state.servers)
        servers.push_back({{"name", server.name}, {"supervisor", server.supervisor}});
    return {{"mcpd_version", state.mcpd_version},
            {"pid", state.pid},
            {"config", state.config_path},
            {"socket", state.socket_path},
            {"listening", state.listening_path},
            {"socket_activated", state.socket_activated},
            {"control_fd", state.control_fd},
            {"keeper_pid", state.keeper_pid},
            {"keeper_fd", state.keeper_fd},
            {"uptime_ms", state.uptime_ms},
            {"upgrades", state.upgrades},
            {"servers", std::move(servers)}};
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
