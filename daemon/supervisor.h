// The per-server state machine, as pure logic.
//
// A Supervisor decides; its SupervisorEnvironment acts. It never touches a process, a timer or
// a clock itself, so unit tests drive every state × event with a fake environment. "Wanted up"
// is kept apart from the actual state: a request only changes what is wanted (and starts or
// stops the ladder); the state follows from what the process does.
#pragma once

#include <chrono>
#include <deque>
#include <string>
#include <string_view>

#include "config/registry.h"

namespace mcpd {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

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

enum class TimerKind { backoff, start_timeout, stable, health, stop_step };

// A reason that means the process misbehaved (as opposed to being asked to stop).
bool is_fault(StopReason reason);

std::string_view to_string(ServerState state);
std::string_view to_string(ExitStep step);
std::string_view to_string(StopReason reason);

struct SpawnResult {
    bool ok = false;
    int pid = -1;
    std::string error;       // a sentence, when !ok
    // Worth retrying (EAGAIN, EMFILE, ENFILE, ENOMEM), unlike a missing command: retried with
    // backoff for as long as it lasts, never counted toward start_limit.
    bool transient = false;
};

class SupervisorEnvironment {
public:
    virtual ~SupervisorEnvironment() = default;
    virtual TimePoint now() const = 0;
    // Start the process and the legacy handshake; the answer comes back as on_ready or
    // on_handshake_failed.
    virtual SpawnResult spawn() = 0;
    virtual void send_health_ping() = 0;
    virtual void close_stdin() = 0;
    virtual void signal_group(int signo) = 0;
    virtual void arm_timer(TimerKind kind, Duration after) = 0;
    virtual void cancel_timer(TimerKind kind) = 0;
    virtual void state_changed(ServerState from, ServerState to) = 0;
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
    void on_ready();
    void on_handshake_failed(std::string why);
    void on_health_reply();
    void on_stdout_closed();
    void on_exit(int status);  // exit code or minus the signal number
    // It exited on the era probe: start again at once, without counting a failure.
    void on_probe_exit(int status);
    void on_timer(TimerKind kind);

    // A changed registry entry; takes effect at the next spawn (the caller restarts).
    void set_config(const config::ServerConfig& config) { config_ = config; }

    ServerState state() const { return state_; }
    bool wanted_up() const { return wanted_up_; }
    int pid() const { return pid_; }
    unsigned restarts() const { return restarts_; }
    unsigned consecutive_failures() const { return consecutive_failures_; }
    const std::string& error() const { return error_; }
    bool has_exited() const { return has_last_exit_; }
    const LastExit& last_exit() const { return last_exit_; }
    TimePoint state_since() const { return state_since_; }
    TimePoint spawned_at() const { return spawned_at_; }
    TimePoint next_start() const { return next_start_; }
    ExitStep stop_step() const { return stop_step_; }
    StopReason stop_reason() const { return stop_reason_; }
    const config::ServerConfig& config() const { return config_; }

private:
    void set_state(ServerState next);
    void spawn_now();
    void begin_stop(StopReason reason);
    void after_exit();
    void schedule_restart();
    void schedule_retry();  // after a transient spawn failure
    void give_up(std::string why);
    bool clean_exit(int status) const;
    bool within_start_limit();
    void forget_failures();
    void cancel_run_timers();

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

    StopReason stop_reason_ = StopReason::none;  // why the running process is being ended
    ExitStep stop_step_ = ExitStep::exit;        // ladder step reached

    unsigned restarts_ = 0;
    unsigned consecutive_failures_ = 0;
    unsigned transient_failures_ = 0;  // spawns in a row that failed for want of resources
    std::deque<TimePoint> failure_times_;  // within the start_limit window
    std::string error_;

    bool has_last_exit_ = false;
    LastExit last_exit_;
};

}  // namespace mcpd
