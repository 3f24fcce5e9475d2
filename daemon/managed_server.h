// One registry entry brought to life: the adapter between its Supervisor and Router (pure
// logic) and the world of processes, pipes, libevent timers and logs.
//
// ManagedServer is the SupervisorEnvironment of its Supervisor and the RouterEnvironment of its
// Router: it turns their decisions into processes, signals, timers and writes, and what the
// process does (exit, handshake, stdout lines and EOF, stdin backlog) back into their events.
// It decides nothing about timing itself: that is the Supervisor's (supervisor.h).
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/io/event_loop.h"
#include "daemon/mux/router.h"
#include "daemon/mux/session_sink.h"
#include "daemon/server/child_output.h"
#include "daemon/server/child_process.h"
#include "daemon/server/handshake.h"
#include "daemon/server/list_cache.h"
#include "daemon/server/log_ring.h"
#include "daemon/server/server_cgroup.h"
#include "daemon/server/spawn.h"
#include "daemon/server/supervisor.h"
#include "daemon/upgrade_state.h"

namespace mcpd {

class Reaper;
class ManagedServer;

// What a ManagedServer needs from the daemon around it.
class ServerHost {
public:
    virtual ~ServerHost() = default;
    virtual EventLoop& loop() = 0;
    virtual Reaper& reaper() = 0;
    virtual std::size_t max_message_bytes() const = 0;
    // [daemon] request_log: whether servers that do not say log each settled request.
    virtual bool request_log_default() const = 0;
    // Where relative commands are looked up when the server has no cwd.
    virtual const std::string& registry_dir() const = 0;
    // Where the server's router writes to its sessions (the SessionTable).
    virtual SessionSink& session_sink() = 0;
    // Stop or resume reading every session of `server` (its stdin is backed up / drained).
    virtual void pause_sessions(ManagedServer& server, bool paused) = 0;
    virtual void server_state_changed(ManagedServer& server, ServerState from, ServerState to) = 0;
    // The server has no process left, not even one whose pipes are still draining.
    virtual void server_drained(ManagedServer& server) = 0;
    // A legacy client of `server`, whose process speaks the stateless era (see
    // RouterEnvironment::pass_to_legacy): take `line` to a legacy process. False: none.
    virtual bool pass_to_legacy(ManagedServer& server, SessionId session,
                                std::string_view line) = 0;
    // sharing = "project": what a session of `server` says its project is (see
    // RouterEnvironment::project_reported).
    virtual void project_reported(ManagedServer& server, SessionId session,
                                  const nlohmann::json* roots_result, std::string_view why) = 0;
    // A session that moved off `server` had its last request there answered.
    virtual void departed_session_gone(ManagedServer& server) = 0;
    // A session of `server` cancelled a request `server` does not have (see
    // RouterEnvironment::cancel_elsewhere).
    virtual void cancel_elsewhere(ManagedServer& server, SessionId session, std::string_view line) = 0;
    // Where lazy servers keep their lists (null: nowhere usable; they then start once for
    // each run of mcpd to learn them).
    virtual const ListCache* list_cache() const { return nullptr; }
};

class ManagedServer final : public SupervisorEnvironment, public RouterEnvironment {
public:
    // `cache_user`: the user a child of one user (a project's or a user's) serves, which its
    // cache entry is keyed by.
    ManagedServer(ServerHost& host, const config::ServerConfig& config,
                  std::optional<uid_t> cache_user = std::nullopt);
    ~ManagedServer() override;

    const std::string& name() const { return config_.name; }
    const config::ServerConfig& config() const { return config_; }
    Supervisor& supervisor() { return supervisor_; }
    const Supervisor& supervisor() const { return supervisor_; }
    LogRing& logs() { return logs_; }
    Router& router() { return router_; }
    const Router& router() const { return router_; }
    const nlohmann::json& initialize_result() const { return initialize_result_; }

    // Apply a changed registry entry (Supervisor::apply_config).
    void apply_config(const config::ServerConfig& config);
    // sharing = "project": the child's project now has these roots, and nothing else of its
    // configuration changed: answer its roots/list with them and tell it, without a restart.
    void set_project_roots(const std::vector<std::string>& roots);
    // Whether settled requests are logged follows its request_log, else the daemon's: read
    // again after [daemon] changed.
    void refresh_request_log();
    // Its running process, for finding its process tree (none while it has none).
    std::optional<ServerMark> process_mark() const;
    // No process at all, not even one draining.
    bool drained() const { return child_ == nullptr && draining_.empty(); }

    const ServerCgroup& cgroup() const { return cgroup_; }
    // The STATUS object of docs/CONTROL.md.
    nlohmann::json status_json() const;

    // SupervisorEnvironment
    TimePoint now() const override;
    Result<int> spawn() override;
    void begin_handshake(EraMemory::Start start) override;
    bool fall_back_to_initialize() override;
    void send_health_ping() override;
    void close_stdin() override;
    void signal_group(int signo) override;
    void abandon_pipes() override;
    void pause_sessions(bool paused) override;
    void fail_waiting(const std::string& why) override;
    void arm_timer(TimerKind kind, Duration after) override;
    void cancel_timer(TimerKind kind) override;
    void state_changed(ServerState from, ServerState to) override;

    // RouterEnvironment (now() and note() are shared with SupervisorEnvironment)
    bool child_send(std::string_view line) override;
    bool child_send_spliced(std::span<const std::string_view> pieces) override;
    std::uint64_t child_next_id() override;
    void want_child() override;
    void deadlines_changed() override;
    std::string start_failure_hint() const override;
    std::string exit_cause() const override;
    void note(std::string_view message) override;
    void note_repeated(std::string_view kind, std::string_view detail) override;
    bool pass_to_legacy(SessionId session, std::string_view line) override;
    void project_reported(SessionId session, const nlohmann::json* roots_result,
                          std::string_view why) override;
    void departed_session_gone(SessionId session) override;
    void cancel_elsewhere(SessionId session, std::string_view line) override;
    void request_settled(const SettledRequest& request) override;
    void catalog_refreshed(const Catalog& catalog) override;
    void child_idle() override;

    // An upgrade in place (managed_server_upgrade.cpp, docs/UPGRADE.md). Why its state cannot
    // be carried now; empty when it can (no process, or a running one with nothing under way).
    // `passing`: set when it is a matter of a moment (an answer due, a process starting), not
    // of something mcpd cannot carry at all yet.
    std::string why_not_carried(bool& passing) const;
    // Its running process as the state carries it (none when it has none): pid, tag, the
    // three pipes' descriptors, the lines they had begun, mcpd's handshake and id counter.
    std::optional<CarriedProcess> carried_process() const;
    // Its box as the state carries it: how its child's sandbox was enforced, its cgroup leaves
    // and counts; none when it never had either.
    std::optional<CarriedBox> carried_box() const;
    // While the new binary checks the state: its process's output is not read (it waits in the
    // pipes), so what the state says it had begun stays true; or it is read on.
    void hold_output(bool hold) {
        if (child_) child_->hold_output(hold);
    }
    // In the new process: `supervisor` restored, and `process` (when there is one) taken over
    // as the current one, ready, without a handshake.
    Result<Done> take_over(const nlohmann::json& supervisor,
                           const std::optional<CarriedProcess>& process,
                           const std::optional<CarriedBox>& box = std::nullopt);

    // Why the server failed, with what to do about it (for a failed server).
    std::string failure() const { return supervisor_.failure(); }
    // `mcpctl cache clear`: what the router knew of its lists goes (its file is dropped by the
    // caller); cold until the process runs again.
    void forget_catalog() { router_.drop_catalog(); }
    // A session attached or left (Supervisor::on_sessions_changed).
    void sessions_changed() { supervisor_.on_sessions_changed(router_.session_count()); }

private:
    // spawn() and begin_handshake() at their seams: the process, its callbacks, the handshake.
    Result<SpawnedProcess> start_process();
    void watch_child(SpawnedProcess process);
    ChildProcess::Callbacks child_callbacks();
    Handshake::Callbacks handshake_callbacks(ChildProcess* child);

    void on_handshake_ready(const nlohmann::json& result);
    // Lazy servers (managed_server_lazy.cpp): the router told whether it is lazy, and given
    // the cached catalog of what it runs now.
    void refresh_lazy();
    std::string cache_key_now() const;
    void on_child_exit(ChildProcess* child, int status);
    void on_child_finished(ChildProcess* child);

    ServerHost& host_;
    config::ServerConfig config_;
    Supervisor supervisor_;
    LogRing logs_;
    std::map<TimerKind, std::unique_ptr<Timer>> timers_;  // the Supervisor's, made when first armed

    std::unique_ptr<ChildProcess> child_;
    // How its last boxed child was boxed (status "sandbox"); none before one.
    std::optional<sandbox::Plan> sandbox_plan_;
    // Its processes' cgroup leaves, where mcpd has a delegated cgroup.
    ServerCgroup cgroup_;
    bool oom_killed_ = false;  // the last process ended by the kernel's OOM killer
    std::vector<std::unique_ptr<ChildProcess>> draining_;  // exited, pipes not yet closed
    std::unique_ptr<ChildIds> ids_;
    std::unique_ptr<Handshake> handshake_;
    nlohmann::json initialize_result_;
    std::optional<uid_t> cache_user_;

    Router router_;
    Timer router_timer_;
    ChildOutput output_;
};

}  // namespace mcpd
