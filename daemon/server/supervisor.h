// The per-server state machine and policy, as pure logic.
//
// A Supervisor decides; its SupervisorEnvironment acts. It never touches a process, a timer or
// a clock itself, so unit tests drive every state × event with a fake environment. "Wanted up"
// is kept apart from the actual state: a request only changes what is wanted (and starts or
// stops the ladder); the state follows from what the process does. Every timing decision about
// a server lives here: restarts and backoff, start and stop timeouts, health pings, the era
// probe's timer and verdict, idle_timeout, the grace after a closed stdout, abandoning pipes
// after an exit, pausing sessions while stdin is backed up, and failing requests that wait for
// a server that is not coming.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/enum_names.h"
#include "common/result.h"
#include "config/registry.h"
#include "daemon/server/config_change.h"
#include "daemon/server/era_memory.h"
#include "daemon/server/stdin_backlog.h"

namespace mcpd {

enum class ServerState { stopped, starting, running, backoff, stopping, failed };

// The step of the stop ladder that ended a process; `exit` when it ended on its own.
enum class ExitStep { exit, eof, term, kill };

// Why a process was (or is being) ended.
enum class StopReason {
    none,
    stopped,           // an admin stop, or a removed server
    restart,           // an admin restart
    reload,            // its registry entry changed
    shutdown,          // the daemon is exiting
    idle,              // no session for idle_timeout
    era_probe,         // it exited on the server/discover probe (a legacy server, not a crash)
    crashed,           // it exited on its own
    unresponsive,      // a health ping went unanswered
    start_timeout,     // no handshake within start_timeout
    handshake_failed,  // it answered initialize with an error or nonsense
    stdout_closed,     // it closed stdout, so nothing it says can reach anyone
};

enum class TimerKind {
    backoff,
    start_timeout,
    stable,
    health,
    stop_step,
    idle,           // no session for idle_timeout
    probe,          // the era probe's wait, as the handshake asks (on_probe_wait)
    stdout_grace,   // stdout closed: is it exiting, or did it only close stdout?
    abandon_pipes,  // an exited process's pipes are still open
    fail_waiting,   // a failed server was wanted: answer its waiting requests next turn
};

// A process that is exiting closes stdout just before its exit is reported: the exit gets this
// long to arrive, so a crash is recorded as a crash.
inline constexpr Duration kExitAfterStdoutClose = std::chrono::milliseconds(250);
// How long the pipes of an exited process are waited for: descendants that escaped its
// process group may hold them open.
inline constexpr Duration kAbandonPipesAfter = std::chrono::seconds(2);

// A reason that means the process misbehaved (as opposed to being asked to stop).
bool is_fault(StopReason reason);

// The words status and the log use for each value.
inline constexpr EnumName<ServerState> kServerStateNames[] = {
    {"stopped", ServerState::stopped},   {"starting", ServerState::starting},
    {"running", ServerState::running},   {"backoff", ServerState::backoff},
    {"stopping", ServerState::stopping}, {"failed", ServerState::failed},
};
inline constexpr EnumName<ExitStep> kExitStepNames[] = {
    {"exit", ExitStep::exit},
    {"eof", ExitStep::eof},
    {"term", ExitStep::term},
    {"kill", ExitStep::kill},
};
inline constexpr EnumName<StopReason> kStopReasonNames[] = {
    {"none", StopReason::none},
    {"stopped", StopReason::stopped},
    {"restart", StopReason::restart},
    {"reload", StopReason::reload},
    {"shutdown", StopReason::shutdown},
    {"idle", StopReason::idle},
    {"era-probe", StopReason::era_probe},
    {"crashed", StopReason::crashed},
    {"unresponsive", StopReason::unresponsive},
    {"start-timeout", StopReason::start_timeout},
    {"handshake-failed", StopReason::handshake_failed},
    {"stdout-closed", StopReason::stdout_closed},
};

std::string_view to_string(ServerState state);
std::string_view to_string(ExitStep step);
std::string_view to_string(StopReason reason);

class SupervisorEnvironment {
public:
    virtual ~SupervisorEnvironment() = default;
    virtual TimePoint now() const = 0;
    // Start the process: its pid, or why not (transient: worth retrying, like EAGAIN, EMFILE,
    // ENFILE, ENOMEM, unlike a missing command; retried with backoff for as long as it lasts,
    // never counted toward start_limit).
    virtual Result<int> spawn() = 0;
    // Begin mcpd's handshake with the process just spawned, as `start` says; the answer comes
    // back as on_ready or on_handshake_failed, the probe's timing as on_probe_wait.
    virtual void begin_handshake(EraMemory::Start start) = 0;
    // The probe went unanswered in time: send initialize. False when its verdict was in.
    virtual bool fall_back_to_initialize() = 0;
    virtual void send_health_ping() = 0;
    virtual void close_stdin() = 0;
    virtual void signal_group(int signo) = 0;
    // Stop waiting for EOF on the pipes of processes that have exited.
    virtual void abandon_pipes() = 0;
    // Stop (or resume) reading every session of the server.
    virtual void pause_sessions(bool paused) = 0;
    // Answer every request waiting for a process with an error that says `why`.
    virtual void fail_waiting(const std::string& why) = 0;
    virtual void arm_timer(TimerKind kind, Duration after) = 0;
    virtual void cancel_timer(TimerKind kind) = 0;
    virtual void state_changed(ServerState from, ServerState to) = 0;
    virtual void note(std::string_view message) = 0;
    // What may explain a process that exited before it was ready (its sandbox keeps it off
    // the network, say), for its error; empty: nothing to add.
    virtual std::string start_failure_hint() const { return {}; }
    // Why the last process ended when mcpd knows better than its exit status ("oom-kill"),
    // for its restart's reason; empty: the status tells.
    virtual std::string exit_cause() const { return {}; }
};

struct LastExit {
    int status = 0;  // exit code, or minus the signal number
    ExitStep step = ExitStep::exit;
    StopReason reason = StopReason::none;
    TimePoint at{};
};

// Exponential restart delay: base * 2^(failures-1), capped; failures counts from 1.
Duration backoff_delay(Duration base, Duration max, unsigned failures);

class Supervisor {
public:
    Supervisor(const config::ServerConfig& config, SupervisorEnvironment& env);

    // Requests. A manual start or restart forgets earlier failures.
    void request_start();
    void request_stop(StopReason reason = StopReason::stopped);
    void request_restart(StopReason reason = StopReason::restart);
    // Skip the rest of the stop ladder: SIGKILL now (a second SIGTERM to the daemon).
    void force_kill();

    // What the process did.
    // The handshake completed; `modern`: through server/discover, which settles the era.
    void on_ready(bool modern);
    void on_ready() { on_ready(false); }  // through initialize
    void on_handshake_failed(std::string why);
    void on_health_reply();
    // Its stdout reached EOF: unless it exits within kExitAfterStdoutClose, on_stdout_closed.
    void on_stdout_eof();
    // It closed stdout and is still running: nothing it says can reach anyone.
    void on_stdout_closed();
    void on_exit(int status);  // exit code or minus the signal number
    // It exited on the era probe: a legacy server (for the era memory); start again at once,
    // without counting a failure.
    void on_probe_exit(int status);
    // A process exited with its pipes still open: give up on them after kAbandonPipesAfter.
    void on_exit_pipes_open();
    // The handshake wants the probe's timer armed for `after` (nullopt: cancelled).
    void on_probe_wait(std::optional<Duration> after);
    // `queued` bytes wait for its stdin, after a write or a drain (stdin_backlog.h).
    void on_input_backlog(std::size_t queued);
    void on_timer(TimerKind kind);

    // What its sessions did.
    // A session attached or left; `count` are attached now (idle_timeout counts from 0).
    void on_sessions_changed(std::size_t count);
    // A session's request needs the process: start it when stopped; when failed, fail the
    // waiting requests now rather than after start_timeout.
    void on_child_wanted();

    // A changed registry entry; takes effect at the next spawn (the caller restarts).
    void set_config(const config::ServerConfig& config) { config_ = config; }
    // A changed registry entry, with what the change needs (config_change.h): replaced at
    // once for access, else the era is forgotten and the server restarted if it is wanted up,
    // or started if it now autostarts.
    void apply_config(const config::ServerConfig& config, ConfigChange change);

    // An upgrade in place (supervisor_snapshot.cpp, docs/UPGRADE.md). Whether the server has
    // no process now (stopped, failed or in backoff).
    bool without_process() const;
    // Whether its state can be carried now: no process, or one running with no health ping
    // waiting for its answer.
    bool carriable() const;
    // Everything it decides by, its times as ages and remaining times.
    nlohmann::json snapshot() const;
    // The state of a fresh Supervisor (stopped, never started) from a snapshot; a backoff's
    // timer is armed with what was left of it, a running process's stability and health
    // timers too (the caller has taken over the process itself). Nothing changes unless all of
    // it is valid.
    Result<Done> restore(const nlohmann::json& snapshot);

    ServerState state() const { return state_; }
    bool wanted_up() const { return wanted_up_; }
    int pid() const { return pid_; }
    unsigned restarts() const { return restarts_; }
    // How many of those restarts each reason caused ("exit 1", "signal 9", "unresponsive").
    const std::map<std::string, unsigned>& restart_reasons() const { return restart_reasons_; }
    unsigned consecutive_failures() const { return consecutive_failures_; }
    const std::string& error() const { return error_; }
    // Why the server failed, with what to do about it (for a failed server).
    std::string failure() const;
    bool has_exited() const { return has_last_exit_; }
    const LastExit& last_exit() const { return last_exit_; }
    TimePoint state_since() const { return state_since_; }
    TimePoint spawned_at() const { return spawned_at_; }
    TimePoint next_start() const { return next_start_; }
    ExitStep stop_step() const { return stop_step_; }
    StopReason stop_reason() const { return stop_reason_; }
    const config::ServerConfig& config() const { return config_; }
    const EraMemory& era() const { return era_; }
    bool sessions_paused() const { return backlog_.paused(); }

private:
    void set_state(ServerState next);
    // "running -> stopping (unresponsive: ...)": a transition as the log tells it.
    std::string transition(ServerState from, ServerState to) const;
    void spawn_now();
    void begin_stop(StopReason reason);
    void next_stop_step();
    void health_tick();
    void probe_unanswered();
    std::string start_timeout_error() const;
    void cancel_run_timers();
    // supervisor_restart.cpp
    void ended_by_ladder();  // the process exited while being stopped
    void ended_on_its_own(int status);
    void schedule_restart();
    void schedule_retry();  // after a transient spawn failure
    void give_up(std::string why);
    // The short reason of a restart scheduled now, and counting it when it happens.
    std::string why_restarted() const;
    void count_restart();
    bool clean_exit(int status) const;
    bool within_start_limit();
    void forget_failures();
    // supervisor_sessions.cpp
    void pause_sessions(StdinBacklog::Change change);
    void on_idle_timeout();
    void fail_waiting_if_failed();

    config::ServerConfig config_;
    SupervisorEnvironment& env_;

    ServerState state_ = ServerState::stopped;
    TimePoint state_since_{};
    bool wanted_up_ = false;
    int pid_ = -1;
    TimePoint spawned_at_{};
    TimePoint next_start_{};
    bool ping_outstanding_ = false;
    bool respawn_at_exit_ = false;  // a start or restart arrived while the ladder ran
    // What the handshake of a starting process waits for (the start_timeout message says it).
    enum class Awaiting { initialize, discover, initialize_after_probe };
    Awaiting awaiting_ = Awaiting::initialize;

    StopReason stop_reason_ = StopReason::none;  // why the running process is being ended
    ExitStep stop_step_ = ExitStep::exit;        // ladder step reached

    unsigned restarts_ = 0;
    std::map<std::string, unsigned> restart_reasons_;
    std::string restart_reason_;  // of the restart the backoff waits for
    unsigned consecutive_failures_ = 0;
    unsigned transient_failures_ = 0;  // spawns in a row that failed for want of resources
    std::deque<TimePoint> failure_times_;  // within the start_limit window
    std::string error_;

    bool has_last_exit_ = false;
    LastExit last_exit_;

    EraMemory era_;
    StdinBacklog backlog_;
    std::size_t sessions_ = 0;  // attached, as last told
};

}  // namespace mcpd
