// The body of an upgrade's state, written and checked (upgrade_state.h).
#include "daemon/upgrade_state.h"

#include <charconv>
#include <cstdio>

#include "common/state_file.h"
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
    return {{"mcpd_version", state.mcpd_version}, {"pid", state.pid},
            {"config", state.config_path},        {"socket", state.socket_path},
            {"uptime_ms", state.uptime_ms},       {"upgrades", state.upgrades},
            {"servers", std::move(servers)}};
}

Result<UpgradeState> parse_upgrade_state(const json& body) {
    UpgradeState out;
    std::string error;
    read_field(body, "mcpd_version", out.mcpd_version, error);
    read_field(body, "pid", out.pid, error);
    read_field(body, "config", out.config_path, error);
    read_field(body, "socket", out.socket_path, error);
    read_field(body, "uptime_ms", out.uptime_ms, error);
    read_field(body, "upgrades", out.upgrades, error);
    const auto servers = body.find("servers");
    if (error.empty() && (servers == body.end() || !servers->is_array()))
        error = "its \"servers\" is missing or not an array";
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

int check_state_command(const std::string& fd_text) {
    int fd = -1;
    const auto [end, parse_error] =
        std::from_chars(fd_text.data(), fd_text.data() + fd_text.size(), fd);
    if (parse_error != std::errc() || end != fd_text.data() + fd_text.size() || fd < 0) {
        std::fprintf(stderr, "mcpd: --check-state needs a descriptor number, not '%s'\n",
                     fd_text.c_str());
        return 2;
    }
    const Result<std::string> text = state_file::read_all(fd);
    Result<state_file::Decoded> decoded =
        text ? state_file::decode(text.value()) : Result<state_file::Decoded>(text.failure());
    if (!decoded) {
        std::fprintf(stderr, "mcpd: %s\n", decoded.error().c_str());
        return 1;
    }
    const Result<UpgradeState> state = parse_upgrade_state(decoded->body);
    if (!state) {
        std::fprintf(stderr, "mcpd: %s\n", state.error().c_str());
        return 1;
    }
    std::printf("%s\n", state_file::acknowledgement(decoded.value()).c_str());
    return 0;
}

}  // namespace mcpd
