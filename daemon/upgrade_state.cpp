// The body of an upgrade's state, written and checked (upgrade_state.h).
#include "daemon/upgrade_state.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <cstdio>
#include <optional>
#include <set>

#include "common/base64url.h"
#include "common/json_fields.h"
#include "common/json_read.h"
#include "common/state_file.h"
#include "common/unique_fd.h"
#include "config/registry.h"
#include "daemon/server/supervisor.h"
#include "daemon/upgrade_state_parts.h"

namespace mcpd {

using nlohmann::json;
using namespace upgrade_parts;

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

using json_read::FieldReader;

// {"address", "fd"}: a listening socket kept across the exec, its fd not one of `taken`.
bool read_listener(const json& entry, std::vector<int>& taken, std::string& address, int& fd,
                   FieldReader& state) {
    if (!entry.is_object()) return false;
    FieldReader in(entry);
    address = in.text("address");
    fd = static_cast<int>(in.integer("fd", kIntMin, kIntMax));
    if (!in.ok()) {
        state.fail(in.error());
        return false;
    }
    if (address.empty() || address.size() > 4096 || !kept_descriptor(fd) ||
        std::find(taken.begin(), taken.end(), fd) != taken.end())
        return false;
    taken.push_back(fd);
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
    FieldReader in(body);
    p.pid = static_cast<int>(in.integer("pid", kIntMin, kIntMax));
    p.tag = in.text("tag");
    p.stdin_fd = static_cast<int>(in.integer("stdin_fd", kIntMin, kIntMax));
    p.stdout_fd = static_cast<int>(in.integer("stdout_fd", kIntMin, kIntMax));
    p.stderr_fd = static_cast<int>(in.integer("stderr_fd", kIntMin, kIntMax));
    const std::string begun_out = in.text("begun_stdout");
    const std::string begun_err = in.text("begun_stderr");
    p.next_id = static_cast<std::uint64_t>(in.integer("next_id", 0));
    p.protocol_version = in.text("protocol_version");
    p.modern = in.flag("modern");
    p.idle_armed = in.flag("idle_armed");
    if (const json* result = in.object("initialize_result")) p.initialize_result = *result;
    if (const json* abandoned = in.array("abandoned")) {
        for (const json& id : *abandoned) {
            const std::optional<std::int64_t> value = json_read::as_integer(id);
            if (!value || *value < 0) in.fail("an item of its \"abandoned\" is of the wrong type");
            else p.abandoned.push_back(static_cast<std::uint64_t>(*value));
        }
    }
    if (const json* logs = in.array("logs")) {
        for (const json& line : *logs) {
            if (!line.is_string()) in.fail("an item of its \"logs\" is of the wrong type");
            else p.logs.push_back(line.get<std::string>());
        }
    }
    if (in.ok()) {
        const std::optional<std::string> out = base64url_decode(begun_out);
        const std::optional<std::string> err = base64url_decode(begun_err);
        if (!out || !err) {
            in.fail("a begun line is not base64url");
        } else {
            p.begun_stdout = *out;
            p.begun_stderr = *err;
        }
    }
    if (in.ok() && (!kept_descriptor(p.stdin_fd) || !kept_descriptor(p.stdout_fd) ||
                    !kept_descriptor(p.stderr_fd) || p.stdin_fd == p.stdout_fd ||
                    p.stdin_fd == p.stderr_fd || p.stdout_fd == p.stderr_fd))
        in.fail("its pipes are not three descriptors above stdio");
    if (in.ok() && p.pid <= 1) in.fail("its pid is not a process mcpd could have run");
    if (!in.ok()) return permanent_failure("a carried process: " + in.error());
    return p;
}

json to_json(const CarriedBox& box) {
    return {{"boxed", box.boxed},
            {"enforced", box.enforced},
            {"unenforced", box.unenforced},
            {"cgroup_leaf", box.cgroup_leaf},
            {"ended_leaves", box.ended_leaves},
            {"oom_kills", box.oom_kills},
            {"counted", box.counted}};
}

Result<CarriedBox> read_carried_box(const json& body) {
    if (!body.is_object()) return permanent_failure("its box is not an object");
    CarriedBox box;
    FieldReader in(body);
    box.boxed = in.flag("boxed");
    box.cgroup_leaf = in.text("cgroup_leaf");
    box.oom_kills = static_cast<std::uint64_t>(in.integer("oom_kills", 0));
    box.counted = in.flag("counted");
    const auto texts = [&in](std::string_view key, std::vector<std::string>& out) {
        const json* list = in.array(key);
        for (std::size_t i = 0; list != nullptr && in.ok() && i < list->size(); ++i) {
            if (!(*list)[i].is_string()) in.fail("an item of its \"" + std::string(key) + "\" is not a text");
            else out.push_back((*list)[i].get<std::string>());
        }
    };
    texts("enforced", box.enforced);
    texts("unenforced", box.unenforced);
    texts("ended_leaves", box.ended_leaves);
    // A leaf is a directory of mcpd's delegated cgroup (checked again when it is taken).
    const auto leaf_like = [](const std::string& leaf) {
        return leaf.starts_with("/") && leaf.size() < 4096 && leaf.find("/..") == std::string::npos &&
               leaf.find('\0') == std::string::npos;
    };
    if (in.ok() && ((!box.cgroup_leaf.empty() && !leaf_like(box.cgroup_leaf)) ||
                    !std::all_of(box.ended_leaves.begin(), box.ended_leaves.end(), leaf_like)))
        in.fail("a cgroup leaf of it is not an absolute path of its own");
    if (in.ok() && !box.cgroup_leaf.empty() && !box.counted) in.fail("it has a leaf it never counted");
    if (!in.ok()) return permanent_failure("its box: " + in.error());
    return box;
}

json to_json(const UpgradeState& state) {
    json http = json::array();
    for (const auto& [address, fd] : state.http_listeners)
        http.push_back({{"address", address}, {"fd", fd}});
    json servers = json::array();
    for (const CarriedServer& server : state.servers)
        servers.push_back({{"name", server.name},
                           {"supervisor", server.supervisor},
                           {"process", server.process ? to_json(*server.process) : json()},
                           {"router", server.router ? to_json(*server.router) : json()},
                           {"instance", instance_json(server.instance)},
                           {"box", server.box ? to_json(*server.box) : json()}});
    json sessions = json::array();
    for (const CarriedSession& session : state.sessions) sessions.push_back(to_json(session));
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
            {"servers", std::move(servers)},
            {"next_session", state.next_session},
            {"followers", followers_json(state.followers)},
            {"sessions", std::move(sessions)},
            {"http", state.http ? to_json(*state.http) : json()},
            {"pool", pool_json(state.pool)}};
}

std::vector<int> kept_descriptors(const UpgradeState& state) {
    std::vector<int> kept = {state.control_fd, state.keeper_fd};
    for (const auto& [address, fd] : state.http_listeners) kept.push_back(fd);
    if (state.metrics_listener) kept.push_back(state.metrics_listener->second);
    for (const CarriedServer& server : state.servers) {
        if (const std::optional<CarriedProcess>& p = server.process)
            kept.insert(kept.end(), {p->stdin_fd, p->stdout_fd, p->stderr_fd});
    }
    for (const CarriedSession& session : state.sessions)
        kept.insert(kept.end(), {session.fd, session.output_fd, session.link_fd});
    for (const auto& [fd, server] : state.followers) kept.push_back(fd);
    if (state.http)
        for (const CarriedHttpConnection& c : state.http->connections) kept.push_back(c.fd);
    std::erase_if(kept, [](int fd) { return fd < 0; });
    return kept;
}

std::vector<pid_t> carried_groups(const UpgradeState& state) {
    std::vector<pid_t> groups;
    for (const CarriedServer& server : state.servers)
        if (server.process) groups.push_back(server.process->pid);
    return groups;
}

Result<UpgradeState> parse_upgrade_state(const json& body) {
    UpgradeState out;
    FieldReader in(body);
    out.mcpd_version = in.text("mcpd_version");
    out.pid = static_cast<pid_t>(in.integer("pid", kIntMin, kIntMax));
    out.config_path = in.text("config");
    out.socket_path = in.text("socket");
    out.listening_path = in.text("listening");
    out.socket_activated = in.flag("socket_activated");
    out.control_fd = static_cast<int>(in.integer("control_fd", kIntMin, kIntMax));
    out.keeper_pid = static_cast<pid_t>(in.integer("keeper_pid", kIntMin, kIntMax));
    out.keeper_fd = static_cast<int>(in.integer("keeper_fd", kIntMin, kIntMax));
    out.uptime_ms = in.integer("uptime_ms");
    out.upgrades = static_cast<std::uint64_t>(in.integer("upgrades", 0));
    // Descriptors are small numbers above stdio; a keeper is a pid or none.
    if (in.ok() && !kept_descriptor(out.control_fd))
        in.fail("its \"control_fd\" is not a descriptor mcpd could have kept");
    if (in.ok() && (out.keeper_pid != -1 || out.keeper_fd != -1) &&
        (out.keeper_pid < 2 || !kept_descriptor(out.keeper_fd) || out.keeper_fd == out.control_fd))
        in.fail("its keeper is neither a process with a pipe nor none");
    std::vector<int> taken = {out.control_fd, out.keeper_fd};
    if (const json* http = in.ok() ? in.array("http_listeners") : nullptr) {
        for (const json& entry : *http) {
            std::string address;
            int fd = -1;
            if (!read_listener(entry, taken, address, fd, in)) {
                in.fail("an HTTP listener is not an address with a descriptor of its own");
                break;
            }
            out.http_listeners.emplace_back(std::move(address), fd);
        }
    }
    if (const json* metrics = in.ok() ? json_read::member(body, "metrics_listener") : nullptr;
        metrics != nullptr && !metrics->is_null()) {
        std::string address;
        int fd = -1;
        if (read_listener(*metrics, taken, address, fd, in))
            out.metrics_listener.emplace(std::move(address), fd);
        else
            in.fail("its metrics listener is not an address with a descriptor of its own");
    } else if (in.ok() && metrics == nullptr) {
        in.fail("its \"metrics_listener\" is missing");
    }
    const json* servers = in.ok() ? in.array("servers") : nullptr;
    if (!in.ok()) return permanent_failure("the state cannot be taken: " + in.error());
    for (const json& entry : *servers) {
        CarriedServer server;
        const std::string* name = json_read::string_at(entry, "name");
        if (name != nullptr) server.name = *name;
        if (name == nullptr || !entry.contains("supervisor"))
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
            const json* ran = json_read::member(server.supervisor, "pid");
            if (ran == nullptr || *ran != carried->pid)
                return permanent_failure("the state cannot be taken: server '" + server.name +
                                         "': its process is not the one its supervisor ran");
            server.process = std::move(carried).value();
        } else if (const std::string* state = json_read::string_at(server.supervisor, "state");
                   state != nullptr && *state == "running") {
            return permanent_failure("the state cannot be taken: server '" + server.name +
                                     "' is running without its process");
        }
        if (const json* router = json_read::member(entry, "router");
            router != nullptr && !router->is_null()) {
            Result<CarriedRouter> carried = read_carried_router(*router);
            if (!carried)
                return permanent_failure("the state cannot be taken: server '" + server.name +
                                         "': " + carried.error());
            server.router = std::move(carried).value();
        }
        if (const json* box = json_read::member(entry, "box"); box != nullptr && !box->is_null()) {
            Result<CarriedBox> carried = read_carried_box(*box);
            if (!carried)
                return permanent_failure("the state cannot be taken: server '" + server.name +
                                         "': " + carried.error());
            server.box = std::move(carried).value();
        }
        FieldReader instance_reader(entry);
        server.instance = read_instance(entry, instance_reader);
        if (!instance_reader.ok())
            return permanent_failure("the state cannot be taken: server '" + server.name +
                                     "': " + instance_reader.error());
        if (const std::string why = instance_problem(server, out.servers); !why.empty())
            return permanent_failure("the state cannot be taken: server '" + server.name +
                                     "': " + why);
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
    if (Result<Done> read = read_sessions(body, out, taken); !read)
        return permanent_failure("the state cannot be taken: " + read.error());
    if (Result<Done> read = read_followers(body, out, taken); !read)
        return permanent_failure("the state cannot be taken: " + read.error());
    if (Result<Done> read = read_http(body, out, taken); !read)
        return permanent_failure("the state cannot be taken: " + read.error());
    if (Result<Done> read = read_pool(body, out); !read)
        return permanent_failure("the state cannot be taken: " + read.error());
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
