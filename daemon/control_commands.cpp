#include "daemon/control_commands.h"

#include <unistd.h>  // getpid

#include <algorithm>

#include "common/json_read.h"
#include "common/log.h"
#include "daemon/daemon.h"

namespace mcpd {

using control::Command;
using nlohmann::json;

namespace {

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

void ControlCommands::handle_request(ControlConnection& c, const json& request) {
    const std::string* name = json_read::string_at(request, "command");
    if (name == nullptr) {
        c.reply_error(control::code::bad_request, "the request has no \"command\" string");
        return;
    }
    const std::optional<Command> command = control::command_named(*name);
    if (!command) {
        c.reply_error(control::code::unknown_command, "unknown command '" + *name + "'");
        return;
    }
    // Looking on is still answered while mcpd shuts down; acting is not.
    const bool looks_only = *command == Command::version || *command == Command::status ||
                            *command == Command::logs || *command == Command::stats;
    if (daemon_.shutting_down() && !looks_only) {
        c.reply_error(control::code::shutting_down, "mcpd is shutting down");
        return;
    }
    dispatch(c, *command, request);
}

void ControlCommands::dispatch(ControlConnection& c, Command command, const json& request) {
    switch (command) {
        case Command::version:
            return version(c);
        case Command::status:
            return status(c, request);
        case Command::start:
        case Command::stop:
        case Command::restart:
            return act(c, request, command);
        case Command::reload:
            return reload(c, request);
        case Command::logs:
            return logs(c, request);
        case Command::shutdown:
            return shutdown(c);
        case Command::attach:
            return attach(c, request);
        case Command::sessions:
            return sessions(c, request);
        case Command::stats:
            return stats(c, request);
        case Command::clear_cache:
            return clear_cache(c, request);
        case Command::http_token:
            return http_token(c, request);
        case Command::upgrade:
            return upgrade(c, request);
    }
}

void ControlCommands::stats(ControlConnection& c, const json& request) {
    const Result<control::StatsRequest> parsed = control::parse_stats(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    std::vector<const ManagedServer*> named;
    if (!parsed->servers.empty()) {
        const Result<std::vector<ManagedServer*>> found = resolve(c, parsed->servers);
        if (!found) {
            c.reply_error(control::code::not_found, found.error());
            return;
        }
        named.assign(found->begin(), found->end());
    } else {
        for (const ManagedServer* s : daemon_.pool().servers())
            if (allowed(c, *s)) named.push_back(s);
    }
    // The owner and root see every session and child; anyone else only its own.
    c.reply_ok(daemon_.stats(named, {parsed->tools, parsed->sessions, parsed->children},
                             trusted(c) ? nullptr : &c.peer()));
}

bool ControlCommands::trusted(const ControlConnection& c) const {
    return daemon_.authority().trusted(c.peer());
}

bool ControlCommands::allowed(const ControlConnection& c, const ManagedServer& server) const {
    return daemon_.authority().may_use(c.peer(), server.config());
}

bool ControlCommands::privileged(ControlConnection& c) {
    if (trusted(c)) return true;
    c.reply_error(control::code::denied,
                  "permission denied: only root and mcpd's own user may do this");
    return false;
}

Result<std::vector<ManagedServer*>> ControlCommands::resolve(
    const ControlConnection& c, const std::vector<std::string>& names) {
    std::vector<ManagedServer*> found;
    std::vector<std::string> missing;
    for (const std::string& name : names) {
        // A server the peer may not use is missing to it, exactly like one that does not
        // exist: one answer for both, so no name it tries tells it what else is configured.
        ManagedServer* server = daemon_.pool().find(name);
        if (server == nullptr || !allowed(c, *server)) {
            missing.push_back(name);
            continue;
        }
        found.push_back(server);
    }
    if (missing.empty()) return found;
    return permanent_failure(trusted(c) ? unknown_servers_message(missing)
                                        : hidden_servers_message(c, missing));
}

std::string ControlCommands::unknown_servers_message(const std::vector<std::string>& names) {
    std::vector<std::string> known;
    for (ManagedServer* s : daemon_.pool().servers()) known.push_back(s->name());
    return "no server named " + join(names) + " in " + daemon_.registry().path +
           (known.empty() ? " (it lists no servers)" : "; known: " + join(known));
}

std::string ControlCommands::hidden_servers_message(const ControlConnection& c,
                                                    const std::vector<std::string>& names) {
    std::vector<std::string> quoted, usable;
    for (const std::string& name : names) quoted.push_back("'" + name + "'");
    for (ManagedServer* s : daemon_.pool().servers()) {
        if (allowed(c, *s)) usable.push_back(s->name());
    }
    return std::string(names.size() == 1 ? "no server named " : "no servers named ") +
           join(quoted) + " that you may use" +
           (usable.empty() ? "; you may use none" : "; you may use: " + join(usable));
}

json ControlCommands::daemon_json(const ControlConnection& c) {
    json full = daemon_.daemon_status();
    if (trusted(c)) return full;
    // Only what says nothing about the rest of the registry: a list of what may be shown, so a
    // field added to daemon_status later stays hidden until it is added here.
    json shown = json::object();
    for (const char* key : {"pid", "version", "uptime_ms"}) {
        if (full.contains(key)) shown[key] = full[key];
    }
    std::size_t visible = 0, running = 0;
    for (ManagedServer* s : daemon_.pool().servers()) {
        if (!allowed(c, *s)) continue;
        ++visible;
        if (s->supervisor().state() == ServerState::running) ++running;
    }
    shown["servers"] = visible;
    shown["running"] = running;
    return shown;
}

json ControlCommands::statuses(const std::vector<std::string>& names) {
    json list = json::array();
    for (const std::string& name : names) {
        if (ManagedServer* server = daemon_.pool().find(name))
            list.push_back(server->status_json());
    }
    return list;
}

void ControlCommands::version(ControlConnection& c) {
    c.reply_ok(control::version_result(MCPD_VERSION, ::getpid()));
}

void ControlCommands::status(ControlConnection& c, const json& request) {
    const Result<control::StatusRequest> parsed = control::parse_status(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    std::vector<ManagedServer*> named;
    if (!parsed->servers.empty()) {
        Result<std::vector<ManagedServer*>> found = resolve(c, parsed->servers);
        if (!found) {
            c.reply_error(control::code::not_found, found.error());
            return;
        }
        named = std::move(found).value();
    } else {
        for (ManagedServer* s : daemon_.pool().servers()) {
            if (allowed(c, *s)) named.push_back(s);
        }
    }
    json list = json::array();
    for (ManagedServer* s : named) {
        json entry = s->status_json();
        if (s->config().sharing == config::Sharing::exclusive) {
            // Each session has its own process; the entry itself only holds the settings.
            entry["sessions"] = daemon_.placement().exclusive_count(s->name());
        }
        if (config::children_per_user(s->config())) {
            // One child per project (or user); the entry itself only holds the settings.
            json children = json::array();
            std::size_t sessions = 0;
            for (const auto& [project, child] : daemon_.pool().projects_of(s->name())) {
                const json own = child->status_json();
                sessions += child->router().session_count();
                // Another user's project (its directory, its process) is not shown.
                if (!daemon_.sessions().any_visible(*child, c.peer())) continue;
                children.push_back({{"project", project->directory},
                                    {"roots", project->roots},
                                    {"state", own["state"]},
                                    {"pid", own["pid"]},
                                    {"uptime_ms", own["uptime_ms"]},
                                    {"sessions", own["sessions"]},
                                    {"restarts", own["restarts"]}});
            }
            entry["sessions"] = sessions;
            entry["children"] = std::move(children);
        }
        if (const ManagedServer* legacy = daemon_.placement().legacy_process(s->name())) {
            // A dual-era server run modern: its legacy clients' own process.
            const json own = legacy->status_json();
            entry["legacy_process"] = {{"state", own["state"]},
                                       {"pid", own["pid"]},
                                       {"sessions", own["sessions"]},
                                       {"restarts", own["restarts"]}};
        }
        list.push_back(std::move(entry));
    }
    json reply = control::status_result(daemon_json(c), std::move(list));
    if (parsed->servers.empty()) {
        // Groups: the registry's and the ad-hoc ones with sessions, with the members left out.
        json groups = daemon_.sessions().groups_json(c.peer());
        for (const config::GroupConfig& group : daemon_.registry().groups) {
            const bool listed = std::any_of(groups.begin(), groups.end(),
                                            [&](const json& g) { return g["name"] == group.name; });
            bool usable = true;
            json members = json::array();
            for (const config::GroupMember& member : group.members) {
                const ManagedServer* server = daemon_.pool().find(member.server);
                usable = usable && server != nullptr && allowed(c, *server);
                members.push_back(member.server);
            }
            if (!listed && usable)
                groups.push_back({{"name", group.name}, {"servers", members}, {"sessions", 0}});
        }
        if (!groups.empty()) reply["groups"] = std::move(groups);
    }
    c.reply_ok(std::move(reply));
}

void ControlCommands::act(ControlConnection& c, const json& request, Command command) {
    // Every field is read before anything is done: a bad request changes nothing.
    const Result<control::ActionRequest> parsed = control::parse_action(request, command);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    const Result<std::vector<ManagedServer*>> targets = resolve(c, parsed->servers);
    if (!targets) {
        c.reply_error(control::code::not_found, targets.error());
        return;
    }
    std::vector<std::string> names;
    for (ManagedServer* s : targets.value()) {
        names.push_back(s->name());
        if (config::children_per_user(s->config())) {
            // Its entry runs no process (that would run without a project): its children
            // start with their projects' sessions, and follow stop and restart.
            if (command == Command::stop) s->supervisor().request_stop();
        } else {
            if (command == Command::start) s->supervisor().request_start();
            if (command == Command::stop) s->supervisor().request_stop();
            if (command == Command::restart) s->supervisor().request_restart();
        }
        for (ManagedServer* child : daemon_.pool().instances_of(s->name(), InstanceKind::project)) {
            if (command == Command::stop) child->supervisor().request_stop();
            if (command == Command::restart && child->supervisor().wanted_up())
                child->supervisor().request_restart();
        }
    }
    if (!parsed->wait) {
        c.reply_ok(control::servers_result(statuses(names)));
        return;
    }
    const Duration timeout = parsed->timeout;
    const bool up = command != Command::stop;
    c.defer_reply();
    ControlConnection* connection = &c;
    const std::uint64_t id = daemon_.wait_for(
        names, up, timeout, [this, connection, names, up, timeout](bool timed_out) {
            const json list = statuses(names);
            if (timed_out) {
                std::vector<std::string> pending;
                for (const json& s : list) {
                    pending.push_back(s["name"].get<std::string>() + " is " +
                                      s["state"].get<std::string>());
                }
                connection->reply_error(
                    control::code::timeout,
                    "gave up waiting after " + format_duration(timeout) + ": " + join(pending), {});
                return;
            }
            std::vector<std::string> failures;
            for (const json& s : list) {
                if (up && s["state"] == "failed") {
                    failures.push_back(s["name"].get<std::string>() + ": " +
                                       (s["error"].is_string() ? s["error"].get<std::string>()
                                                               : std::string("failed")));
                }
            }
            if (!failures.empty()) {
                connection->reply_error(
                    control::code::failed,
                    failures.size() == 1 ? failures.front() : "some servers failed to start",
                    failures.size() == 1 ? std::vector<std::string>{} : failures);
                return;
            }
            connection->reply_ok(control::servers_result(list));
        });
    c.on_close([this, id] { daemon_.cancel_wait(id); });
}

void ControlCommands::reload(ControlConnection& c, const json& request) {
    if (!privileged(c)) return;
    const Result<control::ReloadRequest> parsed = control::parse_reload(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    const ReloadReport report = daemon_.reload(parsed->allow_remove_all);
    if (!report.errors.empty()) {
        c.reply_error(control::code::config,
                      daemon_.options().config_path + " has " +
                          std::to_string(report.errors.size()) +
                          (report.errors.size() == 1 ? " error" : " errors") +
                          "; nothing was changed and the running servers were kept",
                      report.errors);
        return;
    }
    c.reply_ok(control::to_json(
        control::ReloadResult{report.added, report.removed, report.changed, report.unchanged}));
}

void ControlCommands::logs(ControlConnection& c, const json& request) {
    const Result<control::LogsRequest> parsed = control::parse_logs(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    const Result<std::vector<ManagedServer*>> found = resolve(c, {parsed->server});
    if (!found) {
        c.reply_error(control::code::not_found, found.error());
        return;
    }
    ManagedServer& server = *found->front();
    c.reply_ok(control::logs_result(server.logs().tail(static_cast<std::size_t>(parsed->lines))));
    if (!parsed->follow) return;

    follow_carried(c, server);
}

std::vector<std::pair<ControlConnection*, std::string>> ControlCommands::followers() const {
    std::vector<std::pair<ControlConnection*, std::string>> out;
    for (const auto& [id, follower] : followers_) out.emplace_back(follower.connection, follower.server);
    return out;
}

void ControlCommands::follow_carried(ControlConnection& c, ManagedServer& server) {
    ControlConnection* connection = &c;
    const std::string server_name = server.name();
    const std::uint64_t id = server.logs().follow(
        [connection](std::string_view line) { connection->send(control::log_message(line)); });
    followers_[id] = Follower{connection, server_name};
    c.on_close([this, server_name, id] {
        followers_.erase(id);
        if (ManagedServer* s = daemon_.pool().find(server_name)) s->logs().unfollow(id);
    });
}

void ControlCommands::revoke_followers() {
    std::vector<Follower> revoked;
    for (auto it = followers_.begin(); it != followers_.end();) {
        ManagedServer* server = daemon_.pool().find(it->second.server);
        if (server == nullptr || allowed(*it->second.connection, *server)) {
            ++it;
            continue;
        }
        // No further line reaches it, whenever its connection actually closes.
        server->logs().unfollow(it->first);
        revoked.push_back(it->second);
        it = followers_.erase(it);
    }
    for (const Follower& follower : revoked) {
        const PeerCredentials& peer = follower.connection->peer();
        log::info(follower.server, "ending the logs -f of pid " + std::to_string(peer.pid) +
                                       " uid " + std::to_string(peer.uid) +
                                       ": a reload removed it from allow_users/allow_groups");
        follower.connection->refuse(
            control::code::denied, "permission denied: a reload removed uid " +
                                       std::to_string(peer.uid) +
                                       " from the allow_users/allow_groups of '" + follower.server +
                                       "', so its logs are no longer shown to it");
    }
}

void ControlCommands::shutdown(ControlConnection& c) {
    if (!privileged(c)) return;
    log::info("shutdown requested by pid " + std::to_string(c.peer().pid));
    c.reply_ok(control::shutdown_result());
    daemon_.shutdown();
}

void ControlCommands::upgrade(ControlConnection& c, const json& request) {
    if (!privileged(c)) return;
    Result<control::UpgradeRequest> parsed = control::parse_upgrade(request);
    if (!parsed) {
        c.reply_error(control::code::bad_request, parsed.error());
        return;
    }
    daemon_.begin_upgrade(c, std::move(parsed.value().binary));
}

void ControlCommands::sessions(ControlConnection& c, const json& request) {
    const control::SessionsRequest parsed = control::parse_sessions(request);
    std::string filter;
    if (parsed.server) {
        const Result<std::vector<ManagedServer*>> found = resolve(c, {*parsed.server});
        if (!found) {
            c.reply_error(control::code::not_found, found.error());
            return;
        }
        filter = found->front()->name();
    }
    c.reply_ok(control::sessions_result(daemon_.sessions().to_json(filter, c.peer())));
}

}  // namespace mcpd
