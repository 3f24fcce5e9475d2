#include "daemon/control_commands.h"

#include <event2/bufferevent.h>
#include <event2/util.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/control_protocol.h"
#include "common/json_read.h"
#include "common/log.h"
#include "daemon/daemon.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr std::int64_t kDefaultLogLines = 50;
constexpr std::int64_t kMaxLogLines = 1'000'000;
constexpr Duration kDefaultWait = std::chrono::seconds(60);
constexpr std::int64_t kMaxWaitMs = 7LL * 24 * 3600 * 1000;  // a week

// The optional boolean `key` of a request into `out` (left as it is when absent). A value of
// another type is answered with an error naming the field and what it needs, and false.
bool read_flag(ControlConnection& c, const json& request, std::string_view key, bool& out) {
    const json* value = json_read::member(request, key);
    if (value == nullptr) return true;
    if (value->is_boolean()) {
        out = value->get<bool>();
        return true;
    }
    // Appended piece by piece: gcc 12 at -O3 takes `"\"" + std::string(key)` for an
    // overlapping copy (a false -Wrestrict).
    std::string message = "\"";
    message += key;
    message += "\" must be true or false, not ";
    message += json_read::type_phrase(*value);
    c.reply_error(control::code::bad_request, message);
    return false;
}

// The optional whole number `key` (0 to `max`) of a request into `out`, likewise.
bool read_count(ControlConnection& c, const json& request, std::string_view key, std::int64_t max,
                std::int64_t& out) {
    const json* value = json_read::member(request, key);
    if (value == nullptr) return true;
    const std::optional<std::int64_t> n = json_read::as_integer(*value);
    if (n && *n >= 0 && *n <= max) {
        out = *n;
        return true;
    }
    std::string message = "\"";  // piece by piece, as in read_flag
    message += key;
    message += "\" must be a whole number from 0 to ";
    message += std::to_string(max);
    message += ", not ";
    message += n ? std::to_string(*n) : std::string(json_read::type_phrase(*value));
    c.reply_error(control::code::bad_request, message);
    return false;
}

std::string join(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

const std::map<std::string, ControlCommands::Handler>& ControlCommands::table() {
    static const std::map<std::string, Handler> commands = {
        {"version", &ControlCommands::version}, {"status", &ControlCommands::status},
        {"start", &ControlCommands::start},     {"stop", &ControlCommands::stop},
        {"restart", &ControlCommands::restart}, {"reload", &ControlCommands::reload},
        {"logs", &ControlCommands::logs},       {"shutdown", &ControlCommands::shutdown},
        {"attach", &ControlCommands::attach},   {"sessions", &ControlCommands::sessions},
    };
    return commands;
}

void ControlCommands::handle_request(ControlConnection& c, const json& request) {
    const auto command = request.find("command");
    if (command == request.end() || !command->is_string()) {
        c.reply_error(control::code::bad_request, "the request has no \"command\" string");
        return;
    }
    const std::string name = command->get<std::string>();
    const auto entry = table().find(name);
    if (entry == table().end()) {
        c.reply_error(control::code::unknown_command, "unknown command '" + name + "'");
        return;
    }
    if (daemon_.shutting_down() && name != "version" && name != "status" && name != "logs") {
        c.reply_error(control::code::shutting_down, "mcpd is shutting down");
        return;
    }
    (this->*(entry->second))(c, request);
}

bool ControlCommands::trusted(const ControlConnection& c) const {
    return is_privileged_peer(c.peer(), ::getuid());
}

bool ControlCommands::allowed(const ControlConnection& c, const ManagedServer& server) const {
    return trusted(c) || peer_allowed_for(c.peer(), server.config());
}

bool ControlCommands::privileged(ControlConnection& c) {
    if (trusted(c)) return true;
    c.reply_error(control::code::denied,
                  "permission denied: only root and mcpd's own user may do this");
    return false;
}

bool ControlCommands::resolve(ControlConnection& c, const json& names,
                              std::vector<ManagedServer*>& out, bool allow_empty) {
    if (!names.is_null() && !names.is_array()) {
        c.reply_error(control::code::bad_request, "\"servers\" must be a list of names");
        return false;
    }
    if (names.is_null() || names.empty()) {
        if (allow_empty) return true;
        c.reply_error(control::code::bad_request, "name at least one server");
        return false;
    }
    std::vector<std::string> missing;
    for (const json& n : names) {
        if (!n.is_string()) {
            c.reply_error(control::code::bad_request, "server names must be strings");
            return false;
        }
        // A server the peer may not use is missing to it, exactly like one that does not
        // exist: one answer for both, so no name it tries tells it what else is configured.
        ManagedServer* server = daemon_.find(n.get<std::string>());
        if (server == nullptr || !allowed(c, *server)) {
            missing.push_back(n.get<std::string>());
            continue;
        }
        out.push_back(server);
    }
    if (missing.empty()) return true;
    out.clear();
    c.reply_error(control::code::not_found, trusted(c) ? unknown_servers_message(missing)
                                                       : hidden_servers_message(c, missing));
    return false;
}

std::string ControlCommands::unknown_servers_message(const std::vector<std::string>& names) {
    std::vector<std::string> known;
    for (ManagedServer* s : daemon_.servers()) known.push_back(s->name());
    return "no server named " + join(names) + " in " + daemon_.registry().path +
           (known.empty() ? " (it lists no servers)" : "; known: " + join(known));
}

std::string ControlCommands::hidden_servers_message(const ControlConnection& c,
                                                    const std::vector<std::string>& names) {
    std::vector<std::string> quoted, usable;
    for (const std::string& name : names) quoted.push_back("'" + name + "'");
    for (ManagedServer* s : daemon_.servers()) {
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
    for (ManagedServer* s : daemon_.servers()) {
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
        if (ManagedServer* server = daemon_.find(name)) list.push_back(server->status_json());
    }
    return list;
}

void ControlCommands::version(ControlConnection& c, const json&) {
    c.reply_ok({{"version", MCPD_VERSION},
                {"protocol", control::kProtocolVersion},
                {"pid", ::getpid()}});
}

void ControlCommands::status(ControlConnection& c, const json& request) {
    std::vector<ManagedServer*> named;
    if (!resolve(c, request.value("servers", json()), named, true)) return;
    if (named.empty()) {
        for (ManagedServer* s : daemon_.servers()) {
            if (allowed(c, *s)) named.push_back(s);
        }
    }
    json list = json::array();
    for (ManagedServer* s : named) {
        json entry = s->status_json();
        if (s->config().sharing == config::Sharing::exclusive) {
            // Each session has its own process; the entry itself only holds the settings.
            entry["sessions"] = daemon_.exclusive_count(s->name());
        }
        if (const ManagedServer* legacy = daemon_.legacy_process(s->name())) {
            // A dual-era server run modern: its legacy clients' own process.
            const json own = legacy->status_json();
            entry["legacy_process"] = {{"state", own["state"]},
                                       {"pid", own["pid"]},
                                       {"sessions", own["sessions"]},
                                       {"restarts", own["restarts"]}};
        }
        list.push_back(std::move(entry));
    }
    c.reply_ok({{"daemon", daemon_json(c)}, {"servers", list}});
}

void ControlCommands::start(ControlConnection& c, const json& r) { act(c, r, Action::start); }
void ControlCommands::stop(ControlConnection& c, const json& r) { act(c, r, Action::stop); }
void ControlCommands::restart(ControlConnection& c, const json& r) { act(c, r, Action::restart); }

void ControlCommands::act(ControlConnection& c, const json& request, Action action) {
    // Every field is read before anything is done: a bad request changes nothing.
    bool wait = false;
    std::int64_t timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(kDefaultWait).count();
    if (!read_flag(c, request, "wait", wait) ||
        !read_count(c, request, "timeout_ms", kMaxWaitMs, timeout_ms))
        return;
    std::vector<ManagedServer*> targets;
    if (!resolve(c, request.value("servers", json()), targets, false)) return;
    std::vector<std::string> names;
    for (ManagedServer* s : targets) {
        names.push_back(s->name());
        switch (action) {
            case Action::start: s->supervisor().request_start(); break;
            case Action::stop: s->supervisor().request_stop(); break;
            case Action::restart: s->supervisor().request_restart(); break;
        }
    }
    if (!wait) {
        c.reply_ok({{"servers", statuses(names)}});
        return;
    }
    const Duration timeout = std::chrono::milliseconds(timeout_ms);
    const bool up = action != Action::stop;
    c.defer_reply();
    ControlConnection* connection = &c;
    const std::uint64_t id = daemon_.wait_for(names, up, timeout, [this, connection, names, up,
                                                                   timeout](bool timed_out) {
        const json list = statuses(names);
        if (timed_out) {
            std::vector<std::string> pending;
            for (const json& s : list) {
                pending.push_back(s["name"].get<std::string>() + " is " +
                                  s["state"].get<std::string>());
            }
            connection->reply_error(control::code::timeout,
                                    "gave up waiting after " + format_duration(timeout) + ": " +
                                        join(pending),
                                    {});
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
            connection->reply_error(control::code::failed,
                                    failures.size() == 1 ? failures.front()
                                                         : "some servers failed to start",
                                    failures.size() == 1 ? std::vector<std::string>{} : failures);
            return;
        }
        connection->reply_ok({{"servers", list}});
    });
    c.on_close([this, id] { daemon_.cancel_wait(id); });
}

void ControlCommands::reload(ControlConnection& c, const json& request) {
    if (!privileged(c)) return;
    bool allow_remove_all = false;
    if (!read_flag(c, request, "allow_remove_all", allow_remove_all)) return;
    const ReloadReport report = daemon_.reload(allow_remove_all);
    if (!report.errors.empty()) {
        c.reply_error(control::code::config,
                      daemon_.options().config_path + " has " +
                          std::to_string(report.errors.size()) +
                          (report.errors.size() == 1 ? " error" : " errors") +
                          "; nothing was changed and the running servers were kept",
                      report.errors);
        return;
    }
    c.reply_ok({{"added", report.added},
                {"removed", report.removed},
                {"changed", report.changed},
                {"unchanged", report.unchanged}});
}

void ControlCommands::logs(ControlConnection& c, const json& request) {
    const auto name = request.find("server");
    if (name == request.end() || !name->is_string()) {
        c.reply_error(control::code::bad_request, "name the server whose logs you want");
        return;
    }
    std::int64_t count = kDefaultLogLines;
    bool follow = false;
    if (!read_count(c, request, "lines", kMaxLogLines, count) || !read_flag(c, request, "follow", follow))
        return;
    std::vector<ManagedServer*> found;
    if (!resolve(c, json::array({*name}), found, false)) return;
    ManagedServer& server = *found.front();
    c.reply_ok({{"lines", server.logs().tail(static_cast<std::size_t>(count))}});
    if (!follow) return;

    ControlConnection* connection = &c;
    const std::string server_name = server.name();
    const std::uint64_t id = server.logs().follow([connection](std::string_view line) {
        connection->send({{"log", line}});
    });
    c.on_close([this, server_name, id] {
        if (ManagedServer* s = daemon_.find(server_name)) s->logs().unfollow(id);
    });
}

void ControlCommands::shutdown(ControlConnection& c, const json&) {
    if (!privileged(c)) return;
    log::info("shutdown requested by pid " + std::to_string(c.peer().pid));
    c.reply_ok(json::object());
    daemon_.shutdown();
}

}  // namespace mcpd

namespace mcpd {

void ControlCommands::attach(ControlConnection& c, const json& request) {
    const auto name = request.find("server");
    if (name == request.end() || !name->is_string()) {
        c.reply_error(control::code::bad_request, "name the server to attach to");
        return;
    }
    bool pass_fds = false;
    if (!read_flag(c, request, "pass_fds", pass_fds)) return;
    std::vector<ManagedServer*> found;
    if (!resolve(c, json::array({*name}), found, false)) return;
    ManagedServer& server = *found.front();
    const Supervisor& supervisor = server.supervisor();
    if (supervisor.state() == ServerState::failed) {
        c.reply_error(control::code::failed,
                      "server '" + server.name() + "' is failed: " + server.failure());
        return;
    }
    const unsigned limit = server.config().max_sessions;
    const std::size_t attached = server.config().sharing == config::Sharing::exclusive
                                     ? daemon_.exclusive_count(server.name())
                                     : server.router().session_count();
    if (limit > 0 && attached >= limit) {
        c.reply_error(control::code::limit, "server '" + server.name() + "' already has " +
                                                std::to_string(limit) +
                                                " sessions (max_sessions); try again later");
        return;
    }
    const bool exclusive = server.config().sharing == config::Sharing::exclusive;
    const unsigned children = server.config().max_children;
    if (exclusive && children > 0 && attached >= children) {
        c.reply_error(control::code::limit,
                      "server '" + server.name() + "' already runs " + std::to_string(children) +
                          " private processes, one per session (max_children, sharing = "
                          "\"exclusive\"); try again when a session has ended, or raise "
                          "max_children in the registry");
        return;
    }
    const SessionId id = daemon_.next_session_id();
    const std::string server_name = server.name();
    const PeerCredentials peer = c.peer();
    if (!pass_fds) {
        c.reply_ok({{"server", server_name}, {"session", id}});
        bufferevent* bev = c.hand_over();
        if (bev == nullptr) return;  // cut off: it never read its replies
        ManagedServer& target = exclusive ? daemon_.exclusive_instance(server, id) : server;
        daemon_.open_session(target, id, peer, bev, bev, nullptr);
        return;
    }
    c.reply_ok({{"server", server_name}, {"session", id}, {"send_fds", true}});
    ControlConnection* link = &c;
    c.receive_fds(
        [this, server_name, id, peer, link](std::vector<UniqueFd> fds) {
            ManagedServer* shared = daemon_.find(server_name);
            if (shared == nullptr) {
                link->send({{"ended", {{"reason", "the server was removed"}, {"status", 1}}}});
                link->close_after_flush();
                return;
            }
            event_base* base = daemon_.loop().base();
            for (UniqueFd& fd : fds) {
                // Only pipes and sockets can be waited on; a file or a terminal cannot.
                struct stat st {};
                if (::fstat(fd.get(), &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
                    link->send({{"ended",
                                 {{"reason", "mcpd can only use pipes or sockets for a session; use "
                                             "'mcpctl connect --copy'"},
                                  {"status", 1}}}});
                    link->close_after_flush();
                    return;
                }
                evutil_make_socket_nonblocking(fd.get());
            }
            bufferevent* input = bufferevent_socket_new(base, fds[0].release(), BEV_OPT_CLOSE_ON_FREE);
            bufferevent* output = bufferevent_socket_new(base, fds[1].release(), BEV_OPT_CLOSE_ON_FREE);
            ManagedServer& target = shared->config().sharing == config::Sharing::exclusive
                                        ? daemon_.exclusive_instance(*shared, id)
                                        : *shared;
            daemon_.open_session(target, id, peer, input, output, link);
        },
        [this, id] { daemon_.end_session(id, "mcpctl connect went away", true); });
}

void ControlCommands::sessions(ControlConnection& c, const json& request) {
    std::string filter;
    if (const auto name = request.find("server"); name != request.end() && name->is_string()) {
        std::vector<ManagedServer*> found;
        if (!resolve(c, json::array({*name}), found, false)) return;
        filter = found.front()->name();
    }
    c.reply_ok({{"sessions", daemon_.sessions_json(filter, c)}});
}

}  // namespace mcpd
