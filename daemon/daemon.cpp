#include "daemon/daemon.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>

#include "common/byte_buffer.h"
#include "common/descriptors.h"
#include "common/log.h"
#include "daemon/control/socket_reach.h"
#include "daemon/control_commands.h"
#include "daemon/io/descriptor_limit.h"
#include "daemon/io/log_pump.h"
#include "daemon/server/keeper.h"
#include "daemon/server/server_processes.h"
#include "daemon/systemd/socket_activation.h"
#include "daemon/upgrade_state.h"

namespace mcpd {

using nlohmann::json;

namespace {

// How long the block of a large message is kept for the next one.
constexpr Duration kSpareBlockKept = std::chrono::milliseconds(200);

std::string directory_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

}  // namespace

Daemon::Daemon(DaemonOptions options, config::Registry registry)
    : options_(std::move(options)),
      registry_(std::move(registry)),
      registry_dir_(directory_of(registry_.path)),
      authority_(::getuid()),
      started_at_(Clock::now()),
      reaper_(loop_.base()),
      limits_(authority_.owner(), 0, registry_.daemon.max_owner_connections),
      budget_(registry_.daemon.max_queued_output,
              OutputBudget::Hooks{[this] { budget_check_.arm(Duration(0)); },
                                  [this] { heap_trim_.soon(); }}),
      budget_check_(loop_.base(), [this] { budget_.enforce(); }),
      heap_trim_(loop_.base()),
      spare_drop_(loop_.base(), [] { ByteBuffer::drop_spare(); }),
      pool_(*this, [this] { maybe_finish_shutdown(); }),
      placement_(pool_),
      sessions_(loop_, registry_.daemon, placement_, authority_, limits_, budget_),
      upgrade_cleanup_(loop_.base(), [this] {
          finished_upgrade_.reset();
          spent_check_.reset();
      }) {}

Daemon::~Daemon() {
    ByteBuffer::keep_spares({});  // its timer goes with this daemon
    // Sessions before the connections they are linked to, those before the servers.
    waiters_.clear();
    sessions_.clear();
    connections_.clear();
    placement_.clear();
    pool_.clear();
}

int Daemon::run(std::unique_ptr<UpgradeState> carried) {
    const UpgradeState* restored = carried.get();
    // Orphaned grandchildren (npx → node) come back to us instead of init.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    ::signal(SIGPIPE, SIG_IGN);
    log::set_level(registry_.daemon.log_level);
    // From here on no log line blocks the loop, whoever reads (or does not read) stderr.
    const LogPump log_pump(loop_.base());
    max_descriptors_ = raise_descriptor_limit();
    // Large messages that follow one another reuse one block, its pages already there; an
    // isolated one gives it back shortly after (the RSS after a large result stays as it was).
    ByteBuffer::keep_spares([this] { spare_drop_.arm(kSpareBlockKept); });
    limits_.set_descriptor_limit(max_descriptors_);

    // After an upgrade in place the listener is the one the process had before the exec; it and
    // the keeper's pipe were kept open across it, and are closed at the next exec again.
    if (restored != nullptr) {
        for (const int fd : {restored->control_fd, restored->keeper_fd})
            if (fd >= 0) set_close_on_exec(fd);
        int listening = 0;
        socklen_t size = sizeof listening;
        if (::getsockopt(restored->control_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 ||
            listening == 0) {
            log::error("cannot take over: descriptor " + std::to_string(restored->control_fd) +
                       " of the state is not a listening socket");
            return 1;
        }
    }
    Result<UniqueFd> bound = restored != nullptr ? Result<UniqueFd>(UniqueFd(restored->control_fd))
                                                 : activated_control_socket();
    const bool activated =
        restored != nullptr ? restored->socket_activated : bound.ok() && bound.value();
    activated_ = activated;
    if (restored == nullptr && bound.ok() && !activated)
        bound = bind_control_socket(options_.socket_path, options_.socket_access,
                                    options_.socket_is_default);
    if (!bound) {
        log::error(bound.error());
        return 1;
    }
    // Before any server starts and before the loop runs: see daemon/server/keeper.h. The
    // keeper of the process this one replaced is still running, its pipe still open.
    struct stat keeper_pipe {};
    if (restored != nullptr && restored->keeper_pid > 0 &&
        ::fstat(restored->keeper_fd, &keeper_pipe) == 0 && S_ISFIFO(keeper_pipe.st_mode))
        Keeper::instance().adopt(restored->keeper_pid, UniqueFd(restored->keeper_fd),
                                 carried_groups(*restored));
    else
        Keeper::instance().start();
    if (activated && restored == nullptr) log::info("using the control socket passed by systemd");
    listening_path_ = restored != nullptr ? restored->listening_path
                      : activated         ? bound_socket_path(bound.value().get())
                                          : options_.socket_path;
    start_watchdog();
    commands_ = std::make_unique<ControlCommands>(*this);
    control_ = std::make_unique<ControlServer>(
        loop_.base(), std::move(bound).value(),
        [this](UniqueFd fd, bool short_of_descriptors) {
            accept_connection(std::move(fd), short_of_descriptors);
        },
        [this] { return make_room_for_descriptors(); });
    signals_.push_back(
        std::make_unique<SignalWatcher>(loop_.base(), SIGTERM, [this] { shutdown(); }));
    signals_.push_back(
        std::make_unique<SignalWatcher>(loop_.base(), SIGINT, [this] { shutdown(); }));
    signals_.push_back(std::make_unique<SignalWatcher>(loop_.base(), SIGHUP, [this] {
        const ReloadReport report = reload();
        if (!report.errors.empty()) log::error("reload on SIGHUP refused; the old registry stays");
    }));

    if (!activated && restored == nullptr)
        log::info("control socket " + options_.socket_path + ": " + options_.socket_reason);
    warn_unreachable_peers();
    log::info("mcpd " MCPD_VERSION " listening on " + options_.socket_path + " with " +
              std::to_string(registry_.servers.size()) + " servers from " + registry_.path);
    open_list_cache();
    for (const config::ServerConfig& server : registry_.servers) pool_.add(server);
    if (restored != nullptr && restored->metrics_listener) {
        // The metrics listener the process before the exec had, taken over by serve_metrics.
        const int fd = restored->metrics_listener->second;
        set_close_on_exec(fd);
        inherited_metrics_.emplace(restored->metrics_listener->first, UniqueFd(fd));
    }
    serve_metrics(registry_.daemon);
    http_ = std::make_unique<HttpFront>(*this);
    if (restored != nullptr) {
        // The listeners the process before the exec had: served on, never bound again.
        std::map<std::string, UniqueFd> kept;
        for (const auto& [address, fd] : restored->http_listeners) {
            set_close_on_exec(fd);
            kept.emplace(address, UniqueFd(fd));
        }
        http_->inherit(std::move(kept));
    }
    serve_http(registry_.daemon);
    if (restored != nullptr) {
        restore_servers(*restored);
        restored = nullptr;
        carried.reset();
        heap_trim_.soon();  // the state's text and what was read of it are gone
        // A carried process that exited during the exec is a zombie whose SIGCHLD came before
        // this process had its handler: reaped now, so its supervisor hears of it.
        reaper_.reap_all();
    } else {
        for (ManagedServer* server : pool_.servers()) {
            if (server->config().autostart && !server->config().lazy.value_or(false) &&
                !config::starts_children(server->config()))
                server->supervisor().request_start();
        }
    }
    ready_ = true;
    notifier_.ready(status_text());

    loop_.run();

    // Every server is stopped and its processes with it. What is left below mcpd came from
    // one of them and could not be told whose (see daemon/server/server_processes.h): it goes too.
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

json Daemon::daemon_status() const {
    std::size_t running = 0;
    for (const ManagedServer* server : pool_.servers()) {
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
        {"upgrades", upgrades_},
        {"servers", pool_.size()},
        {"running", running},
        {"queued_output",
         {{"bytes", budget_.total()}, {"limit", budget_.limit()}, {"cut", budget_.cuts()}}},
    };
}

nlohmann::json Daemon::stats(const std::vector<const ManagedServer*>& servers,
                             StatsReport::Want want, const PeerCredentials* asking) {
    return stats_report_.build(servers, pool_, sessions_, want,
                               std::chrono::duration_cast<Duration>(Clock::now() - started_at_),
                               asking);
}

void Daemon::start_watchdog() {
    std::uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
    // From the main loop itself: if the loop is stuck, the pings stop and systemd notices.
    const Duration every =
        std::chrono::duration_cast<Duration>(std::chrono::microseconds(usec / 2));
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
        pool_.for_each_instance([](ManagedServer& server) { server.supervisor().force_kill(); });
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
    for (ManagedServer* server : pool_.servers())
        sessions_.close_sessions_of(server->name(), "mcpd is shutting down");
    pool_.for_each_instance(
        [](ManagedServer& server) { server.supervisor().request_stop(StopReason::shutdown); });
    maybe_finish_shutdown();
}

void Daemon::maybe_finish_shutdown() {
    if (!shutting_down_) return;
    bool done = true;
    pool_.for_each_instance([&done](ManagedServer& s) {
        done = done && s.drained() && s.supervisor().state() != ServerState::stopping;
    });
    if (!done) return;
    // Leave the loop shortly, so replies still queued (to `mcpctl shutdown`) are written.
    const timeval linger{0, 50 * 1000};
    event_base_loopexit(loop_.base(), &linger);
}

void Daemon::server_state_changed(ManagedServer& server, ServerState, ServerState to) {
    if (to == ServerState::stopping) legacy_follows(server, server.supervisor().stop_reason());
    update_status();
    check_waiters();
    maybe_finish_shutdown();
}

void Daemon::server_drained(ManagedServer& server) {
    pool_.drained(server);
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

void Daemon::cancel_wait(std::uint64_t id) {
    waiters_.erase(id);
}

bool Daemon::settled(const std::string& name, bool up) {
    const ManagedServer* server = pool_.find(name);
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
    for (const ManagedServer* server : pool_.servers()) {
        if (server->supervisor().state() == ServerState::running) ++running;
        if (server->supervisor().state() == ServerState::failed) ++failed;
    }
    return std::to_string(running) + "/" + std::to_string(pool_.size()) + " servers running" +
           (failed > 0 ? ", " + std::to_string(failed) + " failed" : "");
}

void Daemon::update_status() {
    if (ready_) notifier_.status(status_text());
}

void Daemon::open_list_cache() {
    // Only needed by lazy servers: made when the registry has one (or a reload adds one).
    const bool any_lazy = std::any_of(registry_.servers.begin(), registry_.servers.end(),
                                      [](const auto& s) { return s.lazy.value_or(false); });
    if (!any_lazy || list_cache_) return;
    const std::string directory = default_cache_directory();
    if (directory.empty()) {
        log::warning("lazy servers have nowhere to keep their lists (neither STATE_DIRECTORY, "
                     "XDG_STATE_HOME nor HOME is set): each starts once per run of mcpd");
        return;
    }
    ListCache cache(directory);
    if (Result<Done> prepared = cache.prepare(); !prepared) {
        log::warning(prepared.error() + "; lazy servers start once per run of mcpd instead");
        return;
    }
    list_cache_.emplace(std::move(cache));
}

}  // namespace mcpd
