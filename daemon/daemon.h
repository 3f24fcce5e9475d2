// The daemon: the event loop, the registry, every ManagedServer and the control socket.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/registry.h"
#include "daemon/connection_limits.h"
#include "daemon/control_connection.h"
#include "daemon/control_server.h"
#include "daemon/event_loop.h"
#include "daemon/heap_trim.h"
#include "daemon/managed_server.h"
#include "daemon/notifier.h"
#include "daemon/output_budget.h"
#include "daemon/reaper.h"
#include "daemon/session.h"
#include "daemon/session_batch.h"

namespace mcpd {

struct DaemonOptions {
    std::string config_path;
    std::string socket_path;  // resolved: flag, $MCPD_SOCKET, registry, default
    std::string socket_reason;  // why that one, for the log and `mcpctl version`
    bool socket_is_default = false;  // a per-user default: its directory is mcpd's own
    SocketAccess socket_access;
};

struct ReloadReport {
    std::vector<std::string> errors;  // non-empty: nothing was changed
    std::vector<std::string> added, removed, changed, unchanged;
    // Those of `changed` whose allow_users/allow_groups alone changed: kept running.
    std::vector<std::string> access_only;
};

class Daemon final : public ServerHost {
public:
    Daemon(DaemonOptions options, config::Registry registry);
    ~Daemon() override;

    // Bind the socket, start autostart servers, run until shut down. Returns the exit code.
    int run();

    // Re-read the registry and apply the difference.
    // Refused (report.errors) when the new file would remove every server, unless
    // `allow_remove_all`: an empty or half-written registry must not stop everything.
    ReloadReport reload(bool allow_remove_all = false);
    // Stop every server through the stop ladder, then exit. A second call kills at once.
    void shutdown();
    bool shutting_down() const { return shutting_down_; }

    const config::Registry& registry() const { return registry_; }
    const DaemonOptions& options() const { return options_; }
    // What every session and control connection has queued, against max_queued_output.
    OutputBudget& output_budget() { return budget_; }
    ManagedServer* find(const std::string& name);
    // Servers in registry order.
    std::vector<ManagedServer*> servers();
    nlohmann::json daemon_status() const;

    // Call `done(timed_out)` once every named server has settled: `up` means running or
    // failed, otherwise stopped or failed. Returns an id for cancel_wait.
    std::uint64_t wait_for(std::vector<std::string> names, bool up, Duration timeout,
                           std::function<void(bool timed_out)> done);
    void cancel_wait(std::uint64_t id);

    // Sessions. `input`/`output` become the session's (the same bufferevent for a socket
    // session); `link` is the control connection of an fd-passing `mcpctl connect`, told when
    // the session ends.
    SessionId next_session_id() { return next_session_++; }
    // sharing = "exclusive": a private process of `server` for one session, started now and
    // stopped when the session ends.
    ManagedServer& exclusive_instance(ManagedServer& server, SessionId id);
    // How many exclusive processes of `name` serve sessions now.
    std::size_t exclusive_count(const std::string& name) const;
    void open_session(ManagedServer& server, SessionId id, const PeerCredentials& peer,
                      bufferevent* input, bufferevent* output, ControlConnection* link);
    // End a session (its client went away, or mcpd cuts it off).
    void end_session(SessionId id, const std::string& reason, bool by_client);
    nlohmann::json sessions_json(const std::string& server_filter,
                                 const ControlConnection& asking);

    // ServerHost
    EventLoop& loop() override { return loop_; }
    Reaper& reaper() override { return reaper_; }
    std::size_t max_message_bytes() const override { return registry_.daemon.max_message_bytes; }
    const std::string& registry_dir() const override { return registry_dir_; }
    void server_state_changed(ManagedServer& server, ServerState from, ServerState to) override;
    void server_drained(ManagedServer& server) override;
    // A session whose client closed its input ends once its requests are answered.
    void finish_if_answered(SessionId id);
    void session_send(SessionId session, std::string_view line) override;
    void session_send_spliced(SessionId session, std::span<const std::string_view> pieces) override;
    void session_close(SessionId session, const std::string& reason) override;
    void pause_sessions(ManagedServer& server, bool paused) override;
    bool pass_to_legacy(ManagedServer& server, SessionId session, std::string_view line) override;

    // The legacy process serving `name`'s legacy clients (a dual-era server run modern), if
    // one is up or starting (daemon_legacy.cpp).
    const ManagedServer* legacy_process(const std::string& name) const;

private:
    struct Waiter {
        std::vector<std::string> names;
        bool up = true;
        std::function<void(bool)> done;
        std::unique_ptr<Timer> timer;
    };

    // daemon_peers.cpp: who may hold connections.
    void accept_connection(UniqueFd fd);
    // After a reload: end the sessions, and close the control connections, of users the new
    // registry no longer allows.
    void revoke_access();
    void on_session_closed(Session& session, const std::string& reason, bool by_client);
    // daemon_legacy.cpp: legacy processes of dual-era servers.
    static config::ServerConfig legacy_config(const config::ServerConfig& server);
    ManagedServer& legacy_process_for(ManagedServer& server, SessionId session);
    // A session of a legacy process has left: stop the process when it was the last.
    void legacy_session_left(SessionId session);
    // The server itself is stopped or restarted by an admin (or mcpd exits): its legacy
    // process follows, and comes back when a legacy client asks.
    void legacy_follows(ManagedServer& server, StopReason reason);
    void retire(std::unique_ptr<ManagedServer> server, StopReason reason);
    void close_sessions_of(const std::string& server, const std::string& reason);
    ManagedServer* find_any(const std::string& name);  // retired servers included
    // The ManagedServer a session talks to: its exclusive instance, or the shared one.
    ManagedServer* server_of(SessionId id, const std::string& name);
    void add_server(const config::ServerConfig& config);
    void check_waiters();
    bool settled(const std::string& name, bool up);
    void update_status();
    std::string status_text() const;
    void maybe_finish_shutdown();
    void start_watchdog();

    DaemonOptions options_;
    config::Registry registry_;
    std::string registry_dir_;
    uid_t owner_;
    TimePoint started_at_;

    EventLoop loop_;
    Reaper reaper_;
    Notifier notifier_;
    std::unique_ptr<ControlServer> control_;
    std::unique_ptr<RequestHandler> commands_;
    ConnectionLimits limits_;  // before everything that holds a slot
    // Output queued for every session and control connection together; before them all.
    OutputBudget budget_;
    Timer budget_check_;  // enforce() on the next turn, after a reply or a held write
    HeapTrimmer heap_trim_;
    struct Connection {
        std::unique_ptr<ControlConnection> connection;
        ConnectionLimits::Slot slot;  // none for a refused peer, which is closed at once
    };
    std::map<ControlConnection*, Connection> connections_;

    std::map<std::string, std::unique_ptr<ManagedServer>> servers_;
    std::vector<std::string> order_;  // registry order
    std::vector<std::unique_ptr<ManagedServer>> retired_;  // removed, still stopping

    struct SessionEntry {
        std::unique_ptr<Session> session;
        ControlConnection* link = nullptr;
        ConnectionLimits::Slot slot;  // a socket session's; a linked one counts on its link's
    };
    std::map<SessionId, SessionEntry> sessions_;
    // 2025-03-26 batches: split on the way in, their answers gathered on the way out.
    SessionBatches batches_{registry_.daemon.max_message_bytes};
    std::map<SessionId, std::unique_ptr<ManagedServer>> exclusive_;  // by the session they serve
    // A dual-era server run modern serves its legacy clients on a second process, initialized
    // for them (docs/MULTIPLEXING.md): by server name, and which sessions it holds.
    std::map<std::string, std::unique_ptr<ManagedServer>> legacy_;
    std::map<SessionId, ManagedServer*> legacy_routes_;
    SessionId next_session_ = 1;

    std::map<std::uint64_t, Waiter> waiters_;
    std::uint64_t next_waiter_ = 1;

    std::vector<std::unique_ptr<SignalWatcher>> signals_;
    std::unique_ptr<Timer> watchdog_;
    bool shutting_down_ = false;
    bool ready_ = false;
};

}  // namespace mcpd
