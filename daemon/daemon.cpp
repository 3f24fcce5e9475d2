#include "daemon/daemon.h"

#include <sys/prctl.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include "common/log.h"
#include "daemon/config_change.h"
#include "daemon/control_commands.h"
#include "daemon/descriptor_limit.h"
#include "daemon/keeper.h"
#include "daemon/log_pump.h"
#include "daemon/peer_auth.h"
#include "daemon/server_processes.h"
#include "daemon/socket_activation.h"

namespace mcpd {

using nlohmann::json;

namespace {

std::string directory_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

log::Level to_log_level(config::LogLevel level) {
    switch (level) {
        case config::LogLevel::debug: return log::Level::debug;
        case config::LogLevel::info: return log::Level::info;
        case config::LogLevel::warning: return log::Level::warning;
        case config::LogLevel::error: return log::Level::error;
    }
    return log::Level::info;
}

}  // namespace

Daemon::Daemon(DaemonOptions options, config::Registry registry)
    : options_(std::move(options)),
      registry_(std::move(registry)),
      registry_dir_(directory_of(registry_.path)),
      owner_(::getuid()),
      started_at_(Clock::now()),
      reaper_(loop_.base()),
      limits_(owner_, 0),
      budget_(registry_.daemon.max_queued_output,
              OutputBudget::Hooks{[this] { budget_check_.arm(Duration(0)); },
                                  [this] { heap_trim_.soon(); }}),
      budget_check_(loop_.base(), [this] { budget_.enforce(); }),
      heap_trim_(loop_.base()) {}

Daemon::~Daemon() {
    waiters_.clear();
    sessions_.clear();
    legacy_routes_.clear();
    legacy_.clear();
    exclusive_.clear();
    connections_.clear();
    servers_.clear();
    retired_.clear();
}

int Daemon::run() {
    // Orphaned grandchildren (npx → node) come back to us instead of init.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ::signal(SIGPIPE, SIG_IGN);
    log::set_level(to_log_level(registry_.daemon.log_level));
    // From here on no log line blocks the loop, whoever reads (or does not read) stderr.
    const LogPump log_pump(loop_.base());
    limits_.set_descriptor_limit(raise_descriptor_limit());

    Result<UniqueFd> bound = activated_control_socket();
    const bool activated = bound.ok() && bound.value();
    if (bound.ok() && !activated)
        bound = bind_control_socket(options_.socket_path, options_.socket_access,
                                    options_.socket_is_default);
    if (!bound) {
        log::error(bound.error());
        return 1;
    }
    // Before any server starts and before the loop runs: see daemon/keeper.h.
    Keeper::instance().start();
    if (activated) log::info("using the control socket passed by systemd");
    start_watchdog();
    commands_ = std::make_unique<ControlCommands>(*this);
    control_ = std::make_unique<ControlServer>(loop_.base(), std::move(bound).value(),
                                               [this](UniqueFd fd) { accept_connection(std::move(fd)); });
    signals_.push_back(std::make_unique<SignalWatcher>(loop_.base(), SIGTERM, [this] { shutdown(); }));
    signals_.push_back(std::make_unique<SignalWatcher>(loop_.base(), SIGINT, [this] { shutdown(); }));
    signals_.push_back(std::make_unique<SignalWatcher>(loop_.base(), SIGHUP, [this] {
        const ReloadReport report = reload();
        if (!report.errors.empty()) log::error("reload on SIGHUP refused; the old registry stays");
    }));

    if (!activated) log::info("control socket " + options_.socket_path + ": " + options_.socket_reason);
    log::info("mcpd " MCPD_VERSION " listening on " + options_.socket_path + " with " +
              std::to_string(registry_.servers.size()) + " servers from " + registry_.path);
    for (const config::ServerConfig& server : registry_.servers) add_server(server);
    for (const std::string& name : order_) {
        ManagedServer& server = *servers_[name];
        if (server.config().autostart && server.config().sharing != config::Sharing::exclusive) {
            server.supervisor().request_start();
        }
    }
    ready_ = true;
    notifier_.ready(status_text());

    loop_.run();

    // Every server is stopped and its processes with it. What is left below mcpd came from
    // one of them and could not be told whose (see daemon/server_processes.h): it goes too.
    if (const std::size_t leftover = kill_descendants(::getpid(), Keeper::instance().pid())) {
        log::info("killed " + std::to_string(leftover) +
                  " leftover process(es) of stopped servers before exiting");
    }
    control_.reset();
    // A socket systemd passed belongs to the socket unit, which keeps listening.
    if (!activated) ::unlink(options_.socket_path.c_str());
    log::info("mcpd exiting");
    return 0;
}

void Daemon::add_server(const config::ServerConfig& config) {
    servers_[config.name] = std::make_unique<ManagedServer>(*this, config);
    order_.push_back(config.name);
}

ManagedServer* Daemon::find(const std::string& name) {
    const auto it = servers_.find(name);
    return it == servers_.end() ? nullptr : it->second.get();
}

std::vector<ManagedServer*> Daemon::servers() {
    std::vector<ManagedServer*> out;
    out.reserve(order_.size());
    for (const std::string& name : order_) out.push_back(servers_.at(name).get());
    return out;
}

json Daemon::daemon_status() const {
    std::size_t running = 0;
    for (const auto& [name, server] : servers_) {
        if (server->supervisor().state() == ServerState::running) ++running;
    }
    return {
        {"pid", ::getpid()},
        {"version", MCPD_VERSION},
        {"uptime_ms",
         std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started_at_).count()},
        {"config", registry_.path},
        {"socket", options_.socket_path},
        {"socket_reason", options_.socket_reason},
        {"servers", servers_.size()},
        {"running", running},
        {"queued_output",
         {{"bytes", budget_.total()}, {"limit", budget_.limit()}, {"cut", budget_.cuts()}}},
    };
}

ReloadReport Daemon::reload(bool allow_remove_all) {
    ReloadReport report;
    log::info("reloading " + options_.config_path);
    config::LoadResult loaded = config::load_registry(options_.config_path);
    if (!loaded.registry) {
        for (const config::ConfigError& e : loaded.errors) {
            report.errors.push_back(e.to_string());
            log::error(e.to_string());
        }
        return report;
    }
    config::Registry next = std::move(*loaded.registry);
    const bool keeps_any = std::any_of(order_.begin(), order_.end(), [&next](const std::string& name) {
        return next.find(name) != nullptr;
    });
    if (!order_.empty() && !keeps_any && !allow_remove_all) {
        // An empty file, or one an editor or `cp` is still writing, would stop everything.
        report.errors.push_back(
            options_.config_path + ": " +
            (next.servers.empty() ? "it lists no servers" : "it lists none of the running servers") +
            ", so reloading it would stop every server and end every session; nothing was "
            "changed. Check the file (an editor or a copy may still be writing it); to remove "
            "every server all the same, run 'mcpctl reload --allow-remove-all'");
        log::error(report.errors.back());
        return report;
    }
    notifier_.reloading();
    if (next.daemon.socket != registry_.daemon.socket) {
        log::warning("[daemon].socket changed; the new path takes effect when mcpd restarts");
    }
    log::set_level(to_log_level(next.daemon.log_level));
    if (next.daemon.max_queued_output != budget_.limit()) {
        // Applied at once: the budget covers every client, not only those that come later.
        log::info("max_queued_output is now " + std::to_string(next.daemon.max_queued_output) +
                  " bytes (was " + std::to_string(budget_.limit()) + ")");
        budget_.set_limit(next.daemon.max_queued_output);
        budget_check_.arm(Duration(0));
    }

    std::vector<std::string> next_order;
    for (const config::ServerConfig& config : next.servers) {
        next_order.push_back(config.name);
        ManagedServer* existing = find(config.name);
        if (existing == nullptr) {
            report.added.push_back(config.name);
        } else if (existing->config() == config) {
            report.unchanged.push_back(config.name);
        } else {
            report.changed.push_back(config.name);
            if (classify_change(existing->config(), config) == ConfigChange::access)
                report.access_only.push_back(config.name);
        }
    }
    for (const std::string& name : order_) {
        if (next.find(name) == nullptr) report.removed.push_back(name);
    }

    registry_ = std::move(next);
    order_ = next_order;
    for (const std::string& name : report.removed) {
        close_sessions_of(name, "the server was removed from the registry");
        auto node = servers_.extract(name);
        ManagedServer* server = node.mapped().get();
        retired_.push_back(std::move(node.mapped()));
        server->supervisor().request_stop(StopReason::stopped);
        if (server->drained()) server_drained(*server);
    }
    for (const std::string& name : report.changed) {
        servers_[name]->apply_config(*registry_.find(name));
        for (auto& [key, legacy] : legacy_) {
            if (legacy->name() != name) continue;
            legacy->apply_config(legacy_config(*registry_.find(name)));
        }
    }
    for (const std::string& name : report.added) {
        servers_[name] = std::make_unique<ManagedServer>(*this, *registry_.find(name));
        const config::ServerConfig& added = *registry_.find(name);
        if (added.autostart && added.sharing != config::Sharing::exclusive) {
            servers_[name]->supervisor().request_start();
        }
    }
    revoke_access();
    log::info("reload applied: " + std::to_string(report.added.size()) + " added, " +
              std::to_string(report.removed.size()) + " removed, " +
              std::to_string(report.changed.size()) + " changed (" +
              std::to_string(report.access_only.size()) +
              " only in allow_users/allow_groups, kept running), " +
              std::to_string(report.unchanged.size()) + " unchanged");
    if (ready_) notifier_.ready(status_text());
    check_waiters();
    return report;
}

void Daemon::start_watchdog() {
    std::uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
    // From the main loop itself: if the loop is stuck, the pings stop and systemd notices.
    const Duration every = std::chrono::duration_cast<Duration>(std::chrono::microseconds(usec / 2));
    watchdog_ = std::make_unique<Timer>(loop_.base(), [this, every] {
        notifier_.watchdog();
        watchdog_->arm(every);
    });
    watchdog_->arm(every);
    log::info("systemd watchdog: pinging every " + format_duration(every));
}

void Daemon::shutdown() {
    if (shutting_down_) {
        log::warning("second stop signal: killing every server now");
        for (auto& [name, server] : servers_) server->supervisor().force_kill();
        for (auto& server : retired_) server->supervisor().force_kill();
        for (auto& [id, server] : exclusive_) server->supervisor().force_kill();
        for (auto& [key, server] : legacy_) server->supervisor().force_kill();
        return;
    }
    shutting_down_ = true;
    log::info("shutting down: stopping every server");
    notifier_.stopping();
    // The ladders run in parallel: the longest one bounds the drain. Ask systemd for that
    // long (plus margin) so TimeoutStopSec does not cut it short.
    Duration longest{0};
    for (const config::ServerConfig& server : registry_.servers) {
        longest = std::max(longest, server.stop_grace + server.stop_timeout);
    }
    notifier_.extend_timeout(longest + std::chrono::seconds(5));
    if (control_) control_->stop_accepting();
    for (auto& [name, server] : servers_) close_sessions_of(name, "mcpd is shutting down");
    for (auto& [name, server] : servers_) server->supervisor().request_stop(StopReason::shutdown);
    for (auto& server : retired_) server->supervisor().request_stop(StopReason::shutdown);
    for (auto& [id, server] : exclusive_) server->supervisor().request_stop(StopReason::shutdown);
    for (auto& [key, server] : legacy_) server->supervisor().request_stop(StopReason::shutdown);
    maybe_finish_shutdown();
}

void Daemon::maybe_finish_shutdown() {
    if (!shutting_down_) return;
    auto done = [](const ManagedServer& s) {
        return s.drained() && s.supervisor().state() != ServerState::stopping;
    };
    for (const auto& [name, server] : servers_) {
        if (!done(*server)) return;
    }
    for (const auto& server : retired_) {
        if (!done(*server)) return;
    }
    for (const auto& [id, server] : exclusive_) {
        if (!done(*server)) return;
    }
    for (const auto& [key, server] : legacy_) {
        if (!done(*server)) return;
    }
    // Leave the loop shortly, so replies still queued (to `mcpctl shutdown`) are written.
    const timeval linger{0, 50 * 1000};
    event_base_loopexit(loop_.base(), &linger);
}

ManagedServer* Daemon::find_any(const std::string& name) {
    if (ManagedServer* server = find(name)) return server;
    for (auto& server : retired_) {
        if (server->name() == name) return server.get();
    }
    return nullptr;
}

void Daemon::open_session(ManagedServer& server, SessionId id, const PeerCredentials& peer,
                          bufferevent* input, bufferevent* output, ControlConnection* link) {
    Session::Callbacks callbacks;
    const std::string name = server.name();
    callbacks.on_line = [this, name](Session& session, wire::PaddedText line) {
        ManagedServer* target = server_of(session.id(), name);
        if (target == nullptr) return;
        Router& router = target->router();
        const SessionId sid = session.id();
        // A 2025-03-26 batch: each of its messages is routed as a line of its own.
        const bool batches =
            looks_like_batch(line.text) && router.protocol_of(sid) == kBatchProtocol;
        batches_.on_line(
            sid, line, batches,
            [&router, sid](wire::PaddedText one) { router.on_session_line(sid, one); },
            [&session](std::string_view reply) { session.send(reply); });
    };
    callbacks.on_closed = [this](Session& session, const std::string& reason, bool by_client) {
        on_session_closed(session, reason, by_client);
    };
    callbacks.on_input_ended = [this](Session& session) {
        loop_.defer([this, ended = session.id()] { finish_if_answered(ended); });
    };
    callbacks.on_reply_lost = [this, name](Session& session, std::string_view raw_id,
                                           std::string_view why) {
        if (ManagedServer* target = server_of(session.id(), name)) {
            target->router().on_session_reply_lost(session.id(), raw_id, why);
        }
    };
    auto session = std::make_unique<Session>(
        id, name, peer, input, output, registry_.daemon.max_message_bytes,
        registry_.daemon.max_session_queue_bytes, budget_, std::move(callbacks));
    Session* raw = session.get();
    // A session on the socket takes its connection's place (freed on the next turn); one
    // with passed descriptors lives on its link, which keeps its own.
    ConnectionLimits::Slot slot = link == nullptr ? limits_.take(peer) : ConnectionLimits::Slot();
    sessions_[id] = SessionEntry{std::move(session), link, std::move(slot)};
    if (link != nullptr) {
        link->on_close([this, id] {
            const auto it = sessions_.find(id);
            if (it != sessions_.end()) it->second.link = nullptr;
        });
    }
    log::info(name, "session " + std::to_string(id) + " attached (pid " + std::to_string(peer.pid) +
                        ", uid " + std::to_string(peer.uid) +
                        (link != nullptr ? ", passed descriptors)" : ", on the socket)"));
    server.router().attach(id);
    server.sessions_changed();
    raw->start();
}

void Daemon::end_session(SessionId id, const std::string& reason, bool by_client) {
    const auto it = sessions_.find(id);
    if (it != sessions_.end()) it->second.session->close(reason, by_client);
}

void Daemon::on_session_closed(Session& session, const std::string& reason, bool by_client) {
    const SessionId id = session.id();
    log::info(session.server(), "session " + std::to_string(id) + " ended: " + reason);
    // Detach on the next turn: this may run from inside the router's own loops.
    loop_.defer([this, id, reason, by_client] {
        const auto it = sessions_.find(id);
        if (it == sessions_.end()) return;
        const std::string server_name = it->second.session->server();
        if (ControlConnection* link = it->second.link) {
            link->send(control::ended_message({reason, by_client}));
            link->close_after_flush();
        }
        sessions_.erase(it);
        legacy_session_left(id);
        batches_.forget(id);
        if (auto instance = exclusive_.extract(id); !instance.empty()) {
            // Its private process goes with it, through the stop ladder.
            ManagedServer* server = instance.mapped().get();
            server->router().detach(id);
            retired_.push_back(std::move(instance.mapped()));
            server->supervisor().request_stop(StopReason::stopped);
            if (server->drained()) server_drained(*server);
            return;
        }
        if (ManagedServer* server = find_any(server_name)) {
            server->router().detach(id);
            server->sessions_changed();
        }
    });
}

void Daemon::close_sessions_of(const std::string& server, const std::string& reason) {
    for (auto& [id, entry] : sessions_) {
        if (entry.session->server() == server) entry.session->close(reason, false);
    }
}

void Daemon::session_send(SessionId session, std::string_view line) {
    session_send_spliced(session, std::span<const std::string_view>(&line, 1));
}

void Daemon::session_send_spliced(SessionId session, std::span<const std::string_view> pieces) {
    const auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    Session& target = *it->second.session;
    // An answer to a request of a batch waits for the others, and leaves in the batch's reply.
    if (!batches_.hold(session, pieces, [&target](std::string_view reply) { target.send(reply); }))
        target.send(pieces);
    // The router forgets the request after sending its answer: check on the next turn.
    if (it->second.session->input_ended())
        loop_.defer([this, session] { finish_if_answered(session); });
}

void Daemon::finish_if_answered(SessionId id) {
    const auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    Session& session = *it->second.session;
    if (!session.input_ended() || session.closed()) return;
    const ManagedServer* server = server_of(id, session.server());
    if (server != nullptr && server->router().has_session(id) &&
        server->router().unanswered(id) > 0)
        return;
    session.finish("the client closed its input");
}

void Daemon::session_close(SessionId session, const std::string& reason) {
    end_session(session, reason, false);
}

ManagedServer* Daemon::server_of(SessionId id, const std::string& name) {
    if (const auto legacy = legacy_routes_.find(id); legacy != legacy_routes_.end())
        return legacy->second;
    const auto it = exclusive_.find(id);
    if (it != exclusive_.end()) return it->second.get();
    return find_any(name);
}

ManagedServer& Daemon::exclusive_instance(ManagedServer& server, SessionId id) {
    auto instance = std::make_unique<ManagedServer>(*this, server.config());
    ManagedServer& ref = *instance;
    exclusive_[id] = std::move(instance);
    log::info(server.name(), "starting a private process for session " + std::to_string(id) +
                                 " (sharing = \"exclusive\")");
    ref.supervisor().request_start();
    return ref;
}

std::size_t Daemon::exclusive_count(const std::string& name) const {
    std::size_t n = 0;
    for (const auto& [id, server] : exclusive_) n += server->name() == name ? 1 : 0;
    return n;
}

void Daemon::pause_sessions(ManagedServer& server, bool paused) {
    for (auto& [id, entry] : sessions_) {
        if (server_of(id, entry.session->server()) != &server) continue;
        if (paused) {
            entry.session->pause_input();
        } else {
            entry.session->resume_input();
        }
    }
}

json Daemon::sessions_json(const std::string& server_filter, const ControlConnection& asking) {
    json list = json::array();
    const auto now = Clock::now();
    for (auto& [id, entry] : sessions_) {
        const Session& session = *entry.session;
        if (!server_filter.empty() && session.server() != server_filter) continue;
        ManagedServer* server = server_of(id, session.server());
        if (server == nullptr) continue;
        if (!is_privileged_peer(asking.peer(), owner_) && !peer_allowed_for(asking.peer(), server->config())) {
            continue;
        }
        json entry_json = {{"id", id},
                           {"server", session.server()},
                           {"pid", session.peer().pid},
                           {"uid", session.peer().uid},
                           {"transport", session.passed_fds() ? "fds" : "socket"}};
        for (const SessionSummary& summary : server->router().summaries()) {
            if (summary.id != id) continue;
            entry_json["client"] = {{"name", summary.client_name}, {"version", summary.client_version}};
            entry_json["protocol"] = summary.protocol;
            entry_json["in_flight"] = summary.in_flight;
            entry_json["age_ms"] =
                std::chrono::duration_cast<std::chrono::milliseconds>(now - summary.attached_at).count();
        }
        list.push_back(std::move(entry_json));
    }
    return list;
}

void Daemon::server_state_changed(ManagedServer& server, ServerState, ServerState to) {
    if (to == ServerState::stopping) legacy_follows(server, server.supervisor().stop_reason());
    update_status();
    check_waiters();
    maybe_finish_shutdown();
}

void Daemon::server_drained(ManagedServer& server) {
    const auto it = std::find_if(retired_.begin(), retired_.end(),
                                 [&server](const auto& s) { return s.get() == &server; });
    if (it != retired_.end() && server.supervisor().state() != ServerState::stopping) {
        ManagedServer* key = &server;
        loop_.defer([this, key] {
            const auto found = std::find_if(retired_.begin(), retired_.end(),
                                            [key](const auto& s) { return s.get() == key; });
            if (found != retired_.end() && (*found)->drained()) retired_.erase(found);
            maybe_finish_shutdown();
        });
    }
    maybe_finish_shutdown();
}

std::uint64_t Daemon::wait_for(std::vector<std::string> names, bool up, Duration timeout,
                               std::function<void(bool timed_out)> done) {
    const std::uint64_t id = next_waiter_++;
    Waiter& waiter = waiters_[id];
    waiter.names = std::move(names);
    waiter.up = up;
    waiter.done = std::move(done);
    waiter.timer = std::make_unique<Timer>(loop_.base(), [this, id] {
        auto node = waiters_.extract(id);
        if (!node.empty()) node.mapped().done(true);
    });
    waiter.timer->arm(timeout);
    // It may be settled already; answer on the next turn, never from inside the request.
    loop_.defer([this] { check_waiters(); });
    return id;
}

void Daemon::cancel_wait(std::uint64_t id) { waiters_.erase(id); }

bool Daemon::settled(const std::string& name, bool up) {
    ManagedServer* server = find(name);
    if (server == nullptr) return true;
    const Supervisor& s = server->supervisor();
    if (s.state() == ServerState::failed) return true;
    if (up) {
        return s.state() == ServerState::running ||
               (s.state() == ServerState::stopped && !s.wanted_up());
    }
    return s.state() == ServerState::stopped;
}

void Daemon::check_waiters() {
    std::vector<std::uint64_t> ready;
    for (const auto& [id, waiter] : waiters_) {
        const bool up = waiter.up;  // clang 14 cannot capture a structured binding
        const bool all = std::all_of(waiter.names.begin(), waiter.names.end(),
                                     [&](const std::string& n) { return settled(n, up); });
        if (all) ready.push_back(id);
    }
    for (std::uint64_t id : ready) {
        auto node = waiters_.extract(id);
        if (!node.empty()) node.mapped().done(false);
    }
}

std::string Daemon::status_text() const {
    std::size_t running = 0, failed = 0;
    for (const auto& [name, server] : servers_) {
        if (server->supervisor().state() == ServerState::running) ++running;
        if (server->supervisor().state() == ServerState::failed) ++failed;
    }
    return std::to_string(running) + "/" + std::to_string(servers_.size()) + " servers running" +
           (failed > 0 ? ", " + std::to_string(failed) + " failed" : "");
}

void Daemon::update_status() {
    if (ready_) notifier_.status(status_text());
}

}  // namespace mcpd
