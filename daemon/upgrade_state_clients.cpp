// The parts of an upgrade's state that are the clients (upgrade_state.h): the sessions, with
// the processes they are routed to and their projects, and the `logs -f` connections; written,
// and read back by type with every descriptor named once.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>

#include "common/base64url.h"
#include "common/json_fields.h"
#include "common/json_read.h"
#include "daemon/upgrade_state.h"
#include "daemon/upgrade_state_parts.h"

namespace mcpd {

using nlohmann::json;
using json_read::FieldReader;
using namespace upgrade_parts;

namespace upgrade_parts {

bool fresh_descriptor(int fd, std::vector<int>& taken) {
    if (fd < 0) return true;  // none
    if (std::find(taken.begin(), taken.end(), fd) != taken.end()) return false;
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
    if (server.instance->kind == InstanceKind::legacy) {
        // The legacy process of the shared instance, of a private process, or of a project's
        // child (keyed by that child's key, under its project).
        const std::string& q = server.instance->qualifier;
        const bool of_project = q.starts_with("project\n");
        if (!(q.empty() || q.starts_with("exclusive\n") || of_project))
            return "a legacy process of no instance mcpd has";
        if (of_project != server.instance->project.has_value() ||
            (of_project && q.substr(8) != server.instance->project->key()))
            return "its project is not the one it is kept under";
        return {};
    }
    if (server.instance->kind == InstanceKind::exclusive && server.instance->project)
        return "a private process has a project";
    return {};
}

}  // namespace upgrade_parts

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

namespace upgrade_parts {

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
    else if (at.ok() && kind == "legacy") instance.kind = InstanceKind::legacy;
    else if (at.ok()) at.fail("its kind is not exclusive, project or legacy");
    if (at.ok() && project != nullptr && !project->is_null()) {
        Result<Project> read = read_carried_project(*project);
        if (!read) at.fail(read.error());
        else instance.project = std::move(read).value();
    }
    // Only the legacy process of the shared instance has no qualifier.
    if (at.ok() && instance.qualifier.empty() && instance.kind != InstanceKind::legacy)
        at.fail("it has no qualifier");
    if (!at.ok()) {
        in.fail("its instance: " + at.error());
        return std::nullopt;
    }
    return instance;
}

}  // namespace upgrade_parts

namespace upgrade_parts {

json group_json(const CarriedGroup& g) {
    json members = json::array();
    for (const CarriedGroupMember& m : g.members)
        members.push_back({{"id", m.id},
                           {"server", m.server},
                           {"router", m.router ? to_json(*m.router) : json()},
                           {"instance", instance_json(m.instance)},
                           {"working_project", m.working_project ? to_json(*m.working_project) : json()}});
    return {{"kind", g.kind}, {"name", g.name}, {"members", std::move(members)}, {"router", g.router}};
}

std::optional<CarriedGroup> read_group(const json& body, FieldReader& in) {
    const json* value = json_read::member(body, "group");
    if (value == nullptr || value->is_null()) return std::nullopt;
    if (!value->is_object()) {
        in.fail("its \"group\" is not an object");
        return std::nullopt;
    }
    FieldReader at(*value);
    CarriedGroup g;
    g.kind = at.text("kind");
    g.name = at.text("name");
    if (const json* router = at.object("router")) g.router = *router;
    const json* members = at.array("members");
    if (at.ok() && g.kind != "registry" && g.kind != "adhoc" && g.kind != "solo")
        at.fail("its kind is not a group's");
    if (at.ok() && (g.name.empty() || g.name.size() > 4096)) at.fail("it has no name");
    if (at.ok() && (members->empty() || members->size() > 64)) at.fail("it has no members, or too many");
    for (std::size_t i = 0; at.ok() && i < members->size(); ++i) {
        const json& entry = (*members)[i];
        if (!entry.is_object()) {
            at.fail("a member is not an object");
            break;
        }
        FieldReader m(entry);
        CarriedGroupMember member;
        member.id = static_cast<std::uint64_t>(m.integer("id", 1));
        member.server = m.text("server");
        member.instance = read_instance(entry, m);
        if (const json* router = m.ok() ? json_read::member(entry, "router") : nullptr;
            router != nullptr && !router->is_null()) {
            Result<routing::SessionState> state = read_carried_session(*router);
            if (!state) m.fail(state.error());
            else if (state->id != member.id) m.fail("its state is another session's");
            else member.router = std::move(state).value();
        }
        if (const json* working = m.ok() ? json_read::member(entry, "working_project") : nullptr;
            working != nullptr && !working->is_null()) {
            Result<Project> read = read_carried_project(*working);
            if (!read) m.fail(read.error());
            else member.working_project = std::move(read).value();
        }
        if (m.ok() && member.instance && (member.instance->project || member.instance->kind == InstanceKind::legacy))
            m.fail("its route is not one a member can have");
        if (!m.ok()) {
            at.fail("member " + std::to_string(i) + ": " + m.error());
            break;
        }
        g.members.push_back(std::move(member));
    }
    if (!at.ok()) {
        in.fail("its group: " + at.error());
        return std::nullopt;
    }
    return g;
}

}  // namespace upgrade_parts

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
            {"modern", c.modern ? json{{"kind", to_string(c.modern->first)}, {"qualifier", c.modern->second}}
                                : json()},
            {"working_project", c.working_project ? to_json(*c.working_project) : json()},
            {"group", c.group ? group_json(*c.group) : json()},
            {"http", c.http ? to_json(*c.http) : json()}};
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
    if (const json* modern = in.ok() ? json_read::member(body, "modern") : nullptr;
        modern != nullptr && !modern->is_null()) {
        FieldReader at(*modern);
        const std::string kind = at.text("kind");
        std::string qualifier = at.text("qualifier");
        const InstanceKind kinds[] = {InstanceKind::shared, InstanceKind::exclusive, InstanceKind::project};
        const auto found = std::find_if(std::begin(kinds), std::end(kinds),
                                        [&](InstanceKind k) { return to_string(k) == kind; });
        if (!at.ok() || found == std::end(kinds)) in.fail("the instance it came through is not one mcpd has");
        else if (!c.instance || c.instance->kind != InstanceKind::legacy) in.fail("it came through another instance but is no legacy client");
        else c.modern.emplace(*found, std::move(qualifier));
    }
    if (const json* working = in.ok() ? json_read::member(body, "working_project") : nullptr;
        working != nullptr && !working->is_null()) {
        Result<Project> read = read_carried_project(*working);
        if (!read) in.fail("its working project: " + read.error());
        else c.working_project = std::move(read).value();
    }
    if (in.ok()) c.group = read_group(body, in);
    if (const json* http = in.ok() ? json_read::member(body, "http") : nullptr; http != nullptr && !http->is_null()) {
        Result<CarriedHttpSession> read = read_carried_http_session(*http);
        if (!read) in.fail(read.error());
        else c.http = std::move(read).value();
    }
    if (in.ok() && c.group && (c.instance || c.modern)) in.fail("a group session has a route of its own");
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
    if (in.ok() && c.http &&
        (c.passed_fds || c.fd != -1 || c.output_fd != -1 || c.link_fd != -1 || !c.unread.empty() ||
         !c.unwritten.empty()))
        in.fail("an HTTP session has descriptors or bytes of its own");
    if (in.ok() && !c.http && !kept_descriptor(c.fd)) in.fail("its descriptor is not one mcpd could have kept");
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


namespace upgrade_parts {

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
        const auto has_process = [&](const std::string& name, const std::optional<CarriedInstance>& instance) {
            return std::any_of(out.servers.begin(), out.servers.end(), [&](const CarriedServer& s) {
                if (s.name != name || s.instance.has_value() != instance.has_value()) return false;
                return !s.instance || (s.instance->kind == instance->kind &&
                                       s.instance->qualifier == instance->qualifier);
            });
        };
        // A group session is on no process itself: each member with a session is on one.
        if (!session->group && !has_process(session->server, session->instance))
            return permanent_failure("session " + std::to_string(session->id) +
                                     " is attached to a server or instance the state does not have");
        std::vector<std::uint64_t> given = {session->id};
        if (session->group) {
            for (const CarriedGroupMember& member : session->group->members) {
                given.push_back(member.id);
                if (member.router && !has_process(member.server, member.instance))
                    return permanent_failure("session " + std::to_string(session->id) + ": member " +
                                             member.server + " is on a process the state does not have");
            }
        }
        for (const std::uint64_t id : given)
            if (id >= out.next_session || !ids.insert(id).second)
                return permanent_failure("session " + std::to_string(id) +
                                         " has an id given twice or not given yet");
        if (!fresh_descriptor(session->fd, taken) || !fresh_descriptor(session->output_fd, taken) ||
            !fresh_descriptor(session->link_fd, taken))
            return permanent_failure("session " + std::to_string(session->id) +
                                     ": a descriptor of it is named twice");
        out.sessions.push_back(std::move(session).value());
    }
    return Done{};
}

}  // namespace upgrade_parts


}  // namespace mcpd
