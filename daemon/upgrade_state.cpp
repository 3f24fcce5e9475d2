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

using json_read::FieldReader;

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr std::int64_t kIntMin = std::numeric_limits<int>::min();

// A descriptor mcpd could have kept across the exec: above stdio, within any table's size.
bool kept_descriptor(int fd) { return fd >= 3 && fd < (1 << 20); }

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

// Why a carried server cannot be this instance next to `before` (the servers read so far):
// named twice, a project child not keyed by its project, a project without a child's kind.
std::string instance_problem(const CarriedServer& server, const std::vector<CarriedServer>& before) {
    const auto same = [&](const CarriedServer& other) {
        if (other.name != server.name || other.instance.has_value() != server.instance.has_value())
            return false;
        return !server.instance || (other.instance->kind == server.instance->kind &&
                                    other.instance->qualifier == server.instance->qualifier);
    };
    if (std::any_of(before.begin(), before.end(), same)) return "it is named twice";
    if (!server.instance) return {};
    if (server.instance->kind == InstanceKind::project &&
        (!server.instance->project || server.instance->project->key() != server.instance->qualifier))
        return "its project is not the one it is kept under";
    if (server.instance->kind == InstanceKind::exclusive && server.instance->project)
        return "a private process has a project";
    return {};
}

// A descriptor not named before in the state; it is named now.
bool fresh_descriptor(int fd, std::vector<int>& taken) {
    if (fd < 0) return true;  // none
    if (std::find(taken.begin(), taken.end(), fd) != taken.end()) return false;
    taken.push_back(fd);
    return true;
}

}  // namespace

Result<CarriedSession> read_carried_session_entry(const json& body);

namespace {

json followers_json(const std::vector<std::pair<int, std::string>>& followers) {
    json out = json::array();
    for (const auto& [fd, server] : followers) out.push_back({{"fd", fd}, {"server", server}});
    return out;
}

// The `logs -f` connections, each on a descriptor of its own following a server of the state.
Result<Done> read_followers(const json& body, UpgradeState& out, std::vector<int>& taken) {
    const json* followers = json_read::member(body, "followers");
    if (followers == nullptr) return Done{};  // a state written before followers were carried
    if (!followers->is_array()) return permanent_failure("its \"followers\" is not an array");
    for (const json& entry : *followers) {
        if (!entry.is_object()) return permanent_failure("a follower is not an object");
        FieldReader in(entry);
        const int fd = static_cast<int>(in.integer("fd", kIntMin, kIntMax));
        std::string server = in.text("server");
        if (!in.ok()) return permanent_failure("a follower: " + in.error());
        const bool known = std::any_of(out.servers.begin(), out.servers.end(),
                                       [&](const CarriedServer& s) { return s.name == server; });
        if (!known) return permanent_failure("a follower follows a server the state does not have");
        if (!kept_descriptor(fd) || !fresh_descriptor(fd, taken))
            return permanent_failure("a follower's descriptor is not one of its own");
        out.followers.emplace_back(fd, std::move(server));
    }
    return Done{};
}

// Version 2: the next session id and the sessions, each on a server of the state, with
// descriptors no other entry names. A version 1 state has neither.
Result<Done> read_sessions(const json& body, UpgradeState& out, std::vector<int>& taken) {
    for (const CarriedServer& server : out.servers) {
        if (!server.process) continue;
        for (const int fd : {server.process->stdin_fd, server.process->stdout_fd,
                             server.process->stderr_fd})
            if (!fresh_descriptor(fd, taken))
                return permanent_failure("server '" + server.name +
                                         "': a pipe of its process is named twice");
    }
    if (const json* next = json_read::member(body, "next_session")) {
        const std::optional<std::int64_t> n = json_read::as_integer(*next);
        if (!n || *n < 1) return permanent_failure("its \"next_session\" is not a session id");
        out.next_session = static_cast<std::uint64_t>(*n);
    }
    const json* sessions = json_read::member(body, "sessions");
    if (sessions == nullptr) return Done{};
    if (!sessions->is_array()) return permanent_failure("its \"sessions\" is not an array");
    std::set<std::uint64_t> ids;
    for (const json& entry : *sessions) {
        Result<CarriedSession> session = read_carried_session_entry(entry);
        if (!session) return session.failure();
        const bool known = std::any_of(out.servers.begin(), out.servers.end(), [&](const CarriedServer& s) {
            if (s.name != session->server || s.instance.has_value() != session->instance.has_value())
                return false;
            return !s.instance || (s.instance->kind == session->instance->kind &&
                                   s.instance->qualifier == session->instance->qualifier);
        });
        if (!known)
            return permanent_failure("session " + std::to_string(session->id) +
                                     " is attached to a server or instance the state does not have");
        if (session->id >= out.next_session || !ids.insert(session->id).second)
            return permanent_failure("session " + std::to_string(session->id) +
                                     " has an id given twice or not given yet");
        if (!fresh_descriptor(session->fd, taken) || !fresh_descriptor(session->output_fd, taken) ||
            !fresh_descriptor(session->link_fd, taken))
            return permanent_failure("session " + std::to_string(session->id) +
                                     ": a descriptor of it is named twice");
        out.sessions.push_back(std::move(session).value());
    }
    return Done{};
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

json to_json(const Project& p) {
    json identity;
    if (p.identity)
        identity = {{"uid", p.identity->uid},     {"gid", p.identity->gid},
                    {"groups", p.identity->groups}, {"user", p.identity->user},
                    {"home", p.identity->home}};
    return {{"roots", p.roots},
            {"directory", p.directory},
            {"from_roots", p.from_roots},
            {"user", p.user},
            {"identity", std::move(identity)}};
}

Result<Project> read_carried_project(const json& body) {
    if (!body.is_object()) return permanent_failure("a project is not an object");
    Project p;
    FieldReader in(body);
    p.directory = in.text("directory");
    p.from_roots = in.flag("from_roots");
    p.user = static_cast<uid_t>(in.integer("user", 0, std::numeric_limits<uid_t>::max()));
    if (const json* roots = in.array("roots")) {
        for (const json& root : *roots) {
            // A root is kept in its one spelling: anything else is not what mcpd wrote.
            const std::optional<std::string> normal =
                root.is_string() ? normalise_root_uri(root.get<std::string>()) : std::nullopt;
            if (!normal || *normal != root.get<std::string>()) {
                in.fail("a root of it is not a normalised URI");
                break;
            }
            p.roots.push_back(*normal);
        }
    }
    if (in.ok() && (p.roots.empty() || !std::is_sorted(p.roots.begin(), p.roots.end()) ||
                    std::adjacent_find(p.roots.begin(), p.roots.end()) != p.roots.end()))
        in.fail("its roots are not a sorted set");
    if (in.ok() && (p.directory.empty() || p.directory.front() != '/'))
        in.fail("its directory is not an absolute path");
    const json* identity = in.ok() ? json_read::member(body, "identity") : nullptr;
    if (in.ok() && identity == nullptr) in.fail("its \"identity\" is missing");
    if (in.ok() && !identity->is_null()) {
        if (!identity->is_object()) {
            in.fail("its identity is not an object");
        } else {
            FieldReader who(*identity);
            config::ChildIdentity id;
            id.uid = static_cast<uid_t>(who.integer("uid", 0, std::numeric_limits<uid_t>::max()));
            id.gid = static_cast<gid_t>(who.integer("gid", 0, std::numeric_limits<gid_t>::max()));
            id.user = who.text("user");
            id.home = who.text("home");
            if (const json* groups = who.array("groups")) {
                for (const json& g : *groups) {
                    const std::optional<std::int64_t> n = json_read::as_integer(g);
                    if (!n || *n < 0 || *n > std::numeric_limits<gid_t>::max()) {
                        who.fail("a group of it is not a gid");
                        break;
                    }
                    id.groups.push_back(static_cast<gid_t>(*n));
                }
            }
            if (!who.ok()) in.fail("its identity: " + who.error());
            else p.identity = std::move(id);
        }
    }
    if (!in.ok()) return permanent_failure("a project: " + in.error());
    return p;
}

namespace {

json instance_json(const std::optional<CarriedInstance>& instance) {
    if (!instance) return json();
    return {{"kind", to_string(instance->kind)},
            {"qualifier", instance->qualifier},
            {"project", instance->project ? to_json(*instance->project) : json()}};
}

// null (the shared instance), or an exclusive or project instance; a problem noted in `in`.
std::optional<CarriedInstance> read_instance(const json& body, FieldReader& in) {
    const json* value = json_read::member(body, "instance");
    if (value == nullptr || value->is_null()) return std::nullopt;  // version 2 before instances
    if (!value->is_object()) {
        in.fail("its \"instance\" is not an object");
        return std::nullopt;
    }
    FieldReader at(*value);
    CarriedInstance instance;
    const std::string kind = at.text("kind");
    instance.qualifier = at.text("qualifier");
    const json* project = at.ok() ? json_read::member(*value, "project") : nullptr;
    if (at.ok() && kind == "exclusive") instance.kind = InstanceKind::exclusive;
    else if (at.ok() && kind == "project") instance.kind = InstanceKind::project;
    else if (at.ok()) at.fail("its kind is neither exclusive nor project");
    if (at.ok() && project != nullptr && !project->is_null()) {
        Result<Project> read = read_carried_project(*project);
        if (!read) at.fail(read.error());
        else instance.project = std::move(read).value();
    }
    if (at.ok() && instance.qualifier.empty()) at.fail("it has no qualifier");
    if (!at.ok()) {
        in.fail("its instance: " + at.error());
        return std::nullopt;
    }
    return instance;
}

}  // namespace

json to_json(const CarriedSession& c) {
    return {{"id", c.id},
            {"server", c.server},
            {"passed_fds", c.passed_fds},
            {"fd", c.fd},
            {"output_fd", c.output_fd},
            {"link_fd", c.link_fd},
            {"unread", base64url_encode(c.unread)},
            {"unwritten", base64url_encode(c.unwritten)},
            {"router", to_json(c.router)},
            {"instance", instance_json(c.instance)},
            {"working_project", c.working_project ? to_json(*c.working_project) : json()}};
}

Result<CarriedSession> read_carried_session_entry(const json& body) {
    if (!body.is_object()) return permanent_failure("a carried session is not an object");
    CarriedSession c;
    FieldReader in(body);
    c.id = static_cast<std::uint64_t>(in.integer("id", 1));
    c.server = in.text("server");
    c.passed_fds = in.flag("passed_fds");
    c.fd = static_cast<int>(in.integer("fd", kIntMin, kIntMax));
    c.output_fd = static_cast<int>(in.integer("output_fd", kIntMin, kIntMax));
    c.link_fd = static_cast<int>(in.integer("link_fd", kIntMin, kIntMax));
    const std::string unread = in.text("unread");
    const std::string unwritten = in.text("unwritten");
    const json* router = in.object("router");
    c.instance = read_instance(body, in);
    if (c.instance && c.instance->project) in.fail("its route names a project");
    if (const json* working = in.ok() ? json_read::member(body, "working_project") : nullptr;
        working != nullptr && !working->is_null()) {
        Result<Project> read = read_carried_project(*working);
        if (!read) in.fail("its working project: " + read.error());
        else c.working_project = std::move(read).value();
    }
    if (in.ok()) {
        const std::optional<std::string> read = base64url_decode(unread);
        const std::optional<std::string> left = base64url_decode(unwritten);
        if (!read || !left) {
            in.fail("its unread or unwritten bytes are not base64url");
        } else {
            c.unread = *read;
            c.unwritten = *left;
        }
    }
    if (in.ok() && (c.server.empty() || c.server.size() > 4096)) in.fail("it names no server");
    if (in.ok() && !kept_descriptor(c.fd)) in.fail("its descriptor is not one mcpd could have kept");
    if (in.ok() && c.passed_fds &&
        (!kept_descriptor(c.output_fd) || !kept_descriptor(c.link_fd) || c.output_fd == c.fd ||
         c.link_fd == c.fd || c.link_fd == c.output_fd))
        in.fail("its passed descriptors and link are not three descriptors above stdio");
    if (in.ok() && !c.passed_fds && (c.output_fd != -1 || c.link_fd != -1))
        in.fail("a session on the socket has descriptors of a passed one");
    if (in.ok()) {
        Result<routing::SessionState> state = read_carried_session(*router);
        if (!state) in.fail(state.error());
        else if (state->id != c.id) in.fail("its state is another session's");
        else c.router = std::move(state).value();
    }
    if (!in.ok())
        return permanent_failure("session " + std::to_string(c.id) + ": " + in.error());
    return c;
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
                           {"instance", instance_json(server.instance)}});
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
            {"sessions", std::move(sessions)}};
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
