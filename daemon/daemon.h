// The daemon: the event loop, the registry, the control socket, and what ties them together.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/registry.h"
#include "daemon/control/connection_limits.h"
#include "daemon/control/control_connection.h"
#include "daemon/control/control_server.h"
#include "daemon/control/metrics_http.h"
#include "daemon/http_front.h"
#include "daemon/control/output_budget.h"
#include "daemon/control/peer_auth.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/heap_trim.h"
#include "daemon/managed_server.h"
#include "daemon/reload_plan.h"
#include "daemon/server/reaper.h"
#include "daemon/placement.h"
#include "daemon/server_pool.h"
#include "daemon/session_table.h"
#include "daemon/stats_report.h"
#include "daemon/systemd/notifier.h"
#include "daemon/upgrade_check.h"

namespace mcpd {

class ControlCommands;

struct DaemonOptions {
    std::string config_path;
    std::string socket_path;         // resolved: flag, $MCPD_SOCKET, registry, default
    std::string socket_reason;       // why that one, for the log and `mcpctl version`
    bool socket_is_default = false;  // a per-user default: its directory is mcpd's own
    SocketAccess socket_access;
    // How it was started: its arguments (without argv[0] and without --restore-state) and the
    // file it runs, which an upgrade in place execs again by default (docs/UPGRADE.md).
    std::vector<std::string> args;
    std::string binary;
};

struct UpgradeState;

// What a reload did (the plan it applied), or why it changed nothing (errors).
struct ReloadReport : ReloadPlan {
    std::vector<std::string> errors;  // non-empty: nothing was changed
};

// The joints: the loop, the registry, the control socket, signals, and the orchestration of
// reload and shutdown. The servers are in ServerPool, the sessions in SessionTable, who may do
// what in Authority.
class Daemon final : public ServerHost {
public:
    Daemon(DaemonOptions options, config::Registry registry);
    ~Daemon() override;

    // Bind the socket, start autostart servers, run until shut down. Returns the exit code.
    // `carried`: the state of the mcpd this process replaced in place (docs/UPGRADE.md): its
    // control socket and keeper are taken over and its servers' states restored; the state is
    // freed once restored, so nothing of it stays in memory for the life of the process.
    int run(std::unique_ptr<UpgradeState> carried = nullptr);

    // daemon_upgrade.cpp: replace this process in place with `binary` (empty: the file it
    // runs), answering `asker` once the new binary has read the state, or with why not.
    void begin_upgrade(ControlConnection& asker, std::string binary);
    // Upgrades in place this process has been through.
    std::uint64_t upgrades() const { return upgrades_; }

    // Re-read the registry and apply the difference (plan_reload).
    ReloadReport reload(bool allow_remove_all = false);
    // Stop every server through the stop ladder, then exit. A second call kills at once.
    void shutdown();
    bool shutting_down() const { return shutting_down_; }

    const config::Registry& registry() const { return registry_; }
    const DaemonOptions& options() const { return options_; }
    const Authority& authority() const { return authority_; }
    // What every session and control connection has queued, against max_queued_output.
    OutputBudget& output_budget() { return budget_; }
    ServerPool& pool() { return pool_; }
    Placement& placement() { return placement_; }
    SessionTable& sessions() { return sessions_; }
    // The HTTP front door (null before run()).
    HttpFront* http() { return http_.get(); }
    nlohmann::json daemon_status() const;
    // The result of the stats request for these servers (docs/STATS.md).
    // `asking`: who asked, shown only its own sessions and children (null: everything).
    nlohmann::json stats(const std::vector<const ManagedServer*>& servers, StatsReport::Want want,
                         const PeerCredentials* asking = nullptr);

    // Call `done(timed_out)` once every named server has settled: `up` means running or
    // failed, otherwise stopped or failed. Returns an id for cancel_wait.
    std::uint64_t wait_for(std::vector<std::string> names, bool up, Duration timeout,
                           std::function<void(bool timed_out)> done);
    void cancel_wait(std::uint64_t id);

    // ServerHost
    EventLoop& loop() override { return loop_; }
    Reaper& reaper() override { return reaper_; }
    std::size_t max_message_bytes() const override { return registry_.daemon.max_message_bytes; }
    bool request_log_default() const override { return registry_.daemon.request_log; }
    const ListCache* list_cache() const override { return list_cache_ ? &*list_cache_ : nullptr; }
    const std::string& registry_dir() const override { return registry_dir_; }
    SessionSink& session_sink() override { return sessions_; }
    void pause_sessions(ManagedServer& server, bool paused) override {
        sessions_.pause(server, paused);
    }
    void server_state_changed(ManagedServer& server, ServerState from, ServerState to) override;
    void server_drained(ManagedServer& server) override;
    bool pass_to_legacy(ManagedServer& server, SessionId session, std::string_view line) override;
    void project_reported(ManagedServer& server, SessionId session,
                          const nlohmann::json* roots_result, std::string_view why) override;
    void departed_session_gone(ManagedServer& server) override;
    void cancel_elsewhere(ManagedServer& server, SessionId session, std::string_view line) override;

private:
    struct Waiter {
        std::vector<std::string> names;
        bool up = true;
        std::function<void(bool)> done;
        std::unique_ptr<Timer> timer;
    };

    // daemon_peers.cpp: who may hold connections.
    void accept_connection(UniqueFd fd, bool short_of_descriptors);
    // A control connection of `peer` on `fd`, freed on the next turn after it closes.
    std::unique_ptr<ControlConnection> make_connection(UniqueFd fd, const PeerCredentials& peer);
    // Close up to `count` idle control connections (of `uid` only, when given), oldest idle
    // first, each answered `limit` with `why`; their places are free at once. Logs it, once
    // per uid while it goes on. Returns how many it closed.
    std::size_t make_way(std::size_t count, std::optional<uid_t> uid, const std::string& why);
    // The descriptor table is full: the oldest idle control connections of anybody go.
    std::size_t make_room_for_descriptors();
    // Say once which allowed users and groups cannot reach the socket (control/socket_reach.h).
    void warn_unreachable_peers() const;
    // After a reload: end the sessions, the `logs -f`, and close the control connections, of
    // users the new registry no longer allows.
    void revoke_access();
    // daemon_legacy.cpp: the server itself is stopped or restarted by an admin (or mcpd
    // exits): its legacy process follows, and comes back when a legacy client asks.
    void legacy_follows(ManagedServer& server, StopReason reason);
    // sharing = "project" (daemon_projects.cpp): serve session `session` of `name` on the
    // child of its project, `reported` by its client or else its working directory's.
    void settle_project(SessionId session, const std::string& name,
                        const std::optional<Project>& reported, const std::string& why);
    // The daemon-wide settings of a reloaded registry.
    void apply_daemon_settings(const config::DaemonConfig& next);
    void check_waiters();
    bool settled(const std::string& name, bool up);
    void update_status();
    std::string status_text() const;
    void maybe_finish_shutdown();
    void start_watchdog();
    // Serve GET /metrics on `settings.metrics_listen` (none when empty) to holders of the
    // token in its metrics_token_file, replacing what served it before.
    void serve_metrics(const config::DaemonConfig& settings);

    DaemonOptions options_;
    // Where the control socket really is: options_.socket_path, or where systemd bound the
    // one it passed.
    std::string listening_path_;
    config::Registry registry_;
    std::string registry_dir_;
    const Authority authority_;  // the one owner uid
    TimePoint started_at_;
    StatsReport stats_report_;

    EventLoop loop_;
    Reaper reaper_;
    Notifier notifier_;
    std::unique_ptr<ControlServer> control_;
    std::unique_ptr<MetricsHttp> metrics_;  // [daemon] metrics_listen, when set
    std::unique_ptr<ControlCommands> commands_;
    ConnectionLimits limits_;          // before everything that holds a slot
    std::size_t max_descriptors_ = 0;  // RLIMIT_NOFILE once raised
    // Output queued for every session and control connection together; before them all.
    OutputBudget budget_;
    // Where lazy servers keep their lists (daemon.cpp: open_list_cache); none when unusable.
    std::optional<ListCache> list_cache_;
    void open_list_cache();
    Timer budget_check_;  // enforce() on the next turn, after a reply or a held write
    HeapTrimmer heap_trim_;
    // Gives back the mapped block kept for the next large message (common/byte_buffer.h)
    // once none has come for kSpareBlockKept.
    Timer spare_drop_;
    struct Connection {
        std::unique_ptr<ControlConnection> connection;
        ConnectionLimits::Slot slot;  // none for a refused peer, which is closed at once
    };
    std::map<ControlConnection*, Connection> connections_;
    // When make_way() last closed a connection of each uid: it logs a uid again only after a
    // quiet spell, so a runaway script costs one line, not one per connection.
    std::map<uid_t, TimePoint> made_way_;

    ServerPool pool_;
    Placement placement_;  // after the pool: its routes name the pool's instances
    // The HTTP front door; before the session table, whose HTTP sessions call back into it
    // until they go.
    std::unique_ptr<HttpFront> http_;
    SessionTable sessions_;  // after the pool: sessions end before their servers go
    // Serve HTTP where `settings` says, by default beside the control socket.
    void serve_http(const config::DaemonConfig& settings);

    // daemon_upgrade.cpp. What keeps an upgrade from carrying everything now: what lasts
    // until someone acts (a session, an edit) and what passes in a moment (an answer due);
    // `asker` is the connection that asked, carried by its reply. What the loop's pass holds
    // back for sessions and children is written first: it is no reason to wait.
    struct UpgradeBlockers {
        std::vector<std::string> lasting, passing;
    };
    UpgradeBlockers upgrade_blockers(const ControlConnection* asker);
    // Why the registry file is not the one running (edited, or broken since); empty when it
    // is. Read from disk: asked when the upgrade begins and just before the exec.
    std::string registry_edited() const;
    // Once nothing stands in the way (waiting up to kUpgradeWait for what passes): the state
    // written and handed to the new binary to check.
    void try_upgrade();
    UpgradeState upgrade_state() const;
    // What of the state may change while it is checked with nothing standing in the way;
    // compared before the exec, and a state that changed is written again.
    static nlohmann::json upgrade_fingerprint(const UpgradeState& state);
    void upgrade_checked(Result<Done> checked);
    // Answer the upgrade's asker with an error (`code`) and forget the upgrade.
    void refuse_upgrade(std::string_view code, const std::string& why);
    // Keep the state's descriptors open and exec; returns only when the exec failed.
    void exec_upgrade();
    void restore_servers(const UpgradeState& state);
    // A carried group session: its group made again from the registry, its members on their
    // processes.
    void restore_group_session(CarriedSession carried, ControlConnection* link,
                               std::unique_ptr<ClientTransport> http);
    // A carried `logs -f` connection, following `server` again.
    void restore_follower(UniqueFd fd, const std::string& server);
    // A carried exclusive or project instance of `entry`, made again (then taken over).
    ManagedServer& restore_instance(ManagedServer& entry, const CarriedInstance& instance);
    // A carried session, and (passed) its `mcpctl connect` link, taken over.
    void restore_session(CarriedSession carried);
    // A control connection carried across an upgrade (a passed session's link, a `logs -f`):
    // on `fd`, its peer read again from the socket, holding a place of that user. Null when
    // `fd` is not a usable socket.
    ControlConnection* adopt_connection(UniqueFd fd);
    // A carried session's link told that mcpd could not carry its session, and closed.
    static void end_link(ControlConnection* link);
    // How long an upgrade waits for what passes (a ping's answer, a line being read).
    static constexpr Duration kUpgradeWait = std::chrono::seconds(3);
    struct PendingUpgrade {
        std::string binary;
        TimePoint give_up_at;
        UniqueFd state;  // the sealed memfd
        std::size_t state_bytes = 0;
        nlohmann::json fingerprint;  // upgrade_fingerprint of the state being checked
        std::vector<int> kept;       // the descriptors that state names
        ControlConnection* asker = nullptr;  // null once it has gone
        std::unique_ptr<StateCheck> check;
        std::unique_ptr<Timer> retry;
    };
    std::unique_ptr<PendingUpgrade> upgrade_;
    // Frees a finished upgrade (or a stale check) on the next turn, outside its callbacks. Not
    // loop_.defer: a closure still pending at exit is freed by the loop, after the reaper the
    // check's destructor needs; these members go before it.
    Timer upgrade_cleanup_;
    std::unique_ptr<PendingUpgrade> finished_upgrade_;
    std::unique_ptr<StateCheck> spent_check_;  // a check whose state went stale: freed next turn
    std::uint64_t upgrades_ = 0;
    bool activated_ = false;  // the control socket came from systemd
    // The metrics listener the process before an upgrade in place had, until serve_metrics
    // takes it over (by its configured address).
    std::optional<std::pair<std::string, UniqueFd>> inherited_metrics_;
    std::map<std::uint64_t, Waiter> waiters_;
    std::uint64_t next_waiter_ = 1;

    std::vector<std::unique_ptr<SignalWatcher>> signals_;
    std::unique_ptr<Timer> watchdog_;
    bool shutting_down_ = false;
    bool ready_ = false;
};

}  // namespace mcpd
