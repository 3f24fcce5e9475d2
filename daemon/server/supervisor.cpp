#include "daemon/server/supervisor.h"

#include <csignal>

namespace mcpd {

std::string_view to_string(ServerState state) {
    return name_of<ServerState>(kServerStateNames, state);
}
std::string_view to_string(ExitStep step) {
    return name_of<ExitStep>(kExitStepNames, step);
}
std::string_view to_string(StopReason reason) {
    return name_of<StopReason>(kStopReasonNames, reason);
}

bool is_fault(StopReason reason) {
    switch (reason) {
        case StopReason::crashed:
        case StopReason::unresponsive:
        case StopReason::start_timeout:
        case StopReason::handshake_failed:
        case StopReason::stdout_closed:
            return true;
        default:
            return false;
    }
}

Supervisor::Supervisor(const config::ServerConfig& config, SupervisorEnvironment& env)
    : config_(config), env_(env), state_since_(env.now()), era_(config.era) {}

void Supervisor::request_start() {
    wanted_up_ = true;
    forget_failures();
    switch (state_) {
        case ServerState::stopped:
        case ServerState::failed:
            spawn_now();
            break;
        case ServerState::backoff:
            env_.cancel_timer(TimerKind::backoff);
            spawn_now();
            break;
        case ServerState::starting:
        case ServerState::running:
            break;
        case ServerState::stopping:
            respawn_at_exit_ = true;
            break;
    }
}

void Supervisor::request_stop(StopReason reason) {
    wanted_up_ = false;
    switch (state_) {
        case ServerState::stopped:
            break;
        case ServerState::failed:
            error_.clear();
            set_state(ServerState::stopped);
            break;
        case ServerState::backoff:
            env_.cancel_timer(TimerKind::backoff);
            set_state(ServerState::stopped);
            break;
        case ServerState::starting:
        case ServerState::running:
            begin_stop(reason);
            break;
        case ServerState::stopping:
            respawn_at_exit_ = false;
            // Why it ends stays the fault that started the ladder, if one did.
            if (!is_fault(stop_reason_)) stop_reason_ = reason;
            break;
    }
}

void Supervisor::request_restart(StopReason reason) {
    wanted_up_ = true;
    forget_failures();
    switch (state_) {
        case ServerState::backoff:
            env_.cancel_timer(TimerKind::backoff);
            [[fallthrough]];
        case ServerState::stopped:
        case ServerState::failed:
            spawn_now();
            break;
        case ServerState::starting:
        case ServerState::running:
            begin_stop(reason);
            break;
        case ServerState::stopping:
            respawn_at_exit_ = true;
            break;
    }
}

void Supervisor::force_kill() {
    const bool has_process = state_ == ServerState::starting || state_ == ServerState::running ||
                             state_ == ServerState::stopping;
    if (!has_process) return;
    wanted_up_ = false;  // killed for good: no respawn when it exits
    respawn_at_exit_ = false;
    if (state_ == ServerState::starting || state_ == ServerState::running) {
        begin_stop(StopReason::shutdown);
    }
    if (state_ != ServerState::stopping || stop_step_ == ExitStep::kill) return;
    env_.cancel_timer(TimerKind::stop_step);
    env_.signal_group(SIGKILL);
    stop_step_ = ExitStep::kill;
}

void Supervisor::on_ready(bool modern) {
    // Whatever the state, the process has shown which era it speaks.
    env_.cancel_timer(TimerKind::probe);
    era_.ready(modern);
    if (state_ != ServerState::starting) return;
    env_.cancel_timer(TimerKind::start_timeout);
    error_.clear();
    ping_outstanding_ = false;
    set_state(ServerState::running);
    if (config_.stable_after.count() > 0) env_.arm_timer(TimerKind::stable, config_.stable_after);
    if (config_.health_interval.count() > 0) {
        env_.arm_timer(TimerKind::health, config_.health_interval);
    }
}

void Supervisor::on_handshake_failed(std::string why) {
    if (state_ != ServerState::starting) return;
    error_ = std::move(why);
    begin_stop(StopReason::handshake_failed);
}

void Supervisor::on_health_reply() {
    ping_outstanding_ = false;
}

void Supervisor::on_stdout_eof() {
    if (state_ != ServerState::starting && state_ != ServerState::running) return;
    env_.arm_timer(TimerKind::stdout_grace, kExitAfterStdoutClose);
}

void Supervisor::on_stdout_closed() {
    if (state_ != ServerState::starting && state_ != ServerState::running) return;
    error_ = "closed its stdout while still running";
    begin_stop(StopReason::stdout_closed);
}

void Supervisor::on_exit(int status) {
    const ServerState was = state_;
    const bool was_stopping = was == ServerState::stopping;
    std::string exited = "pid ";
    exited += std::to_string(pid_);
    exited += " exited with status ";
    exited += std::to_string(status);
    exited += " (";
    exited += to_string(was_stopping ? stop_step_ : ExitStep::exit);
    exited += ')';
    env_.note(exited);
    pause_sessions(backlog_.gone());  // nothing waits for its stdin any more
    pid_ = -1;
    if (!was_stopping && was != ServerState::starting && was != ServerState::running) return;
    has_last_exit_ = true;
    last_exit_ = LastExit{status, was_stopping ? stop_step_ : ExitStep::exit,
                          was_stopping ? stop_reason_ : StopReason::crashed, env_.now()};
    env_.cancel_timer(TimerKind::stop_step);
    cancel_run_timers();
    if (was == ServerState::starting) {
        if (std::string hint = env_.start_failure_hint(); !hint.empty()) {
            error_ = "exited with status " + std::to_string(status) + " before it was ready: " +
                     std::move(hint);
            env_.note(error_);
        }
    }
    if (was_stopping) {
        ended_by_ladder();
    } else {
        ended_on_its_own(status);
    }
}

void Supervisor::on_probe_exit(int status) {
    if (state_ != ServerState::starting) {
        on_exit(status);
        return;
    }
    // Some legacy servers exit on any request before initialize (rmcp-based ones, for one):
    // not a crash, and not counted toward start_limit.
    std::string exited = "pid ";
    exited += std::to_string(pid_);
    exited += " (status ";
    exited += std::to_string(status);
    exited += ") exited on the era probe; starting it as a legacy server";
    env_.note(exited);
    pause_sessions(backlog_.gone());
    era_.exited_on_probe();
    pid_ = -1;
    has_last_exit_ = true;
    last_exit_ = LastExit{status, ExitStep::exit, StopReason::era_probe, env_.now()};
    cancel_run_timers();
    spawn_now();
}

void Supervisor::on_exit_pipes_open() {
    env_.arm_timer(TimerKind::abandon_pipes, kAbandonPipesAfter);
}

void Supervisor::on_probe_wait(std::optional<Duration> after) {
    if (after && state_ == ServerState::starting) {
        env_.arm_timer(TimerKind::probe, *after);
    } else {
        env_.cancel_timer(TimerKind::probe);
        // The probe was answered in time; unless that answer made it ready (or failed), the
        // handshake goes on with initialize.
        if (state_ == ServerState::starting && awaiting_ == Awaiting::discover) {
            awaiting_ = Awaiting::initialize;
        }
    }
}

// Names the request that went unanswered: a modern child is sent server/discover, a legacy one
// initialize, and an unknown one the probe first (initialize once the probe was answered, or
// went unanswered for too long).
std::string Supervisor::start_timeout_error() const {
    std::string why = "no answer to ";
    why += awaiting_ == Awaiting::discover ? "server/discover" : "initialize";
    why += " within start_timeout (";
    why += format_duration(config_.start_timeout);
    why += ")";
    if (awaiting_ == Awaiting::initialize_after_probe) {
        why += ", sent after server/discover went unanswered";
    }
    return why;
}

void Supervisor::apply_config(const config::ServerConfig& config, ConfigChange change) {
    if (change == ConfigChange::none) return;
    config_ = config;
    if (change == ConfigChange::access) {
        // The process never sees who may use it; the daemon ends sessions no longer allowed.
        env_.note("only settings mcpd applies itself changed (allow_users, allow_groups, "
                  "filters, request_log, replay): applied without a restart");
        return;
    }
    era_.reset(config.era);
    if (wanted_up_) {
        request_restart(StopReason::reload);
    } else if (config.autostart && !config.lazy.value_or(false)) {
        request_start();
    }
}

void Supervisor::on_timer(TimerKind kind) {
    switch (kind) {
        case TimerKind::backoff:
            if (state_ != ServerState::backoff) return;
            count_restart();
            spawn_now();
            return;
        case TimerKind::start_timeout:
            if (state_ != ServerState::starting) return;
            error_ = start_timeout_error();
            begin_stop(StopReason::start_timeout);
            return;
        case TimerKind::stable:
            if (state_ == ServerState::running) consecutive_failures_ = 0;
            return;
        case TimerKind::health:
            if (state_ == ServerState::running) health_tick();
            return;
        case TimerKind::idle:
            on_idle_timeout();
            return;
        case TimerKind::fail_waiting:
            fail_waiting_if_failed();
            return;
        case TimerKind::probe:
            if (state_ == ServerState::starting) probe_unanswered();
            return;
        case TimerKind::stdout_grace:
            on_stdout_closed();
            return;
        case TimerKind::abandon_pipes:
            env_.abandon_pipes();
            return;
        case TimerKind::stop_step:
            if (state_ == ServerState::stopping) next_stop_step();
            return;
    }
}

void Supervisor::health_tick() {
    if (ping_outstanding_) {
        error_ = "no answer to a health ping within " + format_duration(config_.health_interval);
        begin_stop(StopReason::unresponsive);
        return;
    }
    ping_outstanding_ = true;
    env_.send_health_ping();
    env_.arm_timer(TimerKind::health, config_.health_interval);
}

void Supervisor::probe_unanswered() {
    if (env_.fall_back_to_initialize()) {
        awaiting_ = Awaiting::initialize_after_probe;
        env_.note(
            "no answer to server/discover in time: sending initialize "
            "(a late answer to the probe still decides the era)");
    }
}

void Supervisor::next_stop_step() {
    if (stop_step_ == ExitStep::eof) {
        env_.signal_group(SIGTERM);
        env_.signal_group(SIGCONT);  // a stopped process cannot act on SIGTERM
        stop_step_ = ExitStep::term;
        env_.arm_timer(TimerKind::stop_step, config_.stop_timeout);
    } else if (stop_step_ == ExitStep::term) {
        env_.signal_group(SIGKILL);
        stop_step_ = ExitStep::kill;
    }
}

void Supervisor::set_state(ServerState next) {
    if (next == state_) return;
    const ServerState from = state_;
    state_ = next;
    state_since_ = env_.now();
    env_.note(transition(from, next));
    // Requests that wait for a process that is not coming are answered now.
    if (next == ServerState::failed) env_.fail_waiting("it failed: " + error_);
    if (next == ServerState::stopped) env_.fail_waiting("it was stopped");
    env_.state_changed(from, next);
}

std::string Supervisor::transition(ServerState from, ServerState to) const {
    std::string line(to_string(from));
    line += " -> ";
    line += to_string(to);
    if (to == ServerState::stopping) {
        line += " (";
        line += to_string(stop_reason_);
        if (is_fault(stop_reason_) && !error_.empty()) {
            line += ": ";
            line += error_;
        }
        line += ')';
    } else if (to == ServerState::failed && !error_.empty()) {
        line += ": ";
        line += error_;
    }
    return line;
}

void Supervisor::spawn_now() {
    respawn_at_exit_ = false;
    ping_outstanding_ = false;
    stop_reason_ = StopReason::none;
    stop_step_ = ExitStep::exit;
    const Result<int> spawned = env_.spawn();
    if (!spawned) {
        error_ = spawned.error();
        if (spawned.transient()) {
            schedule_retry();
        } else {
            set_state(ServerState::failed);
        }
        return;
    }
    pid_ = spawned.value();
    transient_failures_ = 0;
    spawned_at_ = env_.now();
    set_state(ServerState::starting);
    env_.arm_timer(TimerKind::start_timeout, config_.start_timeout);
    const EraMemory::Start start = era_.next_start();
    awaiting_ = start == EraMemory::Start::legacy ? Awaiting::initialize : Awaiting::discover;
    env_.begin_handshake(start);
}

void Supervisor::begin_stop(StopReason reason) {
    stop_reason_ = reason;
    if (reason == StopReason::handshake_failed || reason == StopReason::start_timeout) {
        era_.start_failed();  // the era it was started in may be stale: probe next time
    }
    cancel_run_timers();
    set_state(ServerState::stopping);
    stop_step_ = ExitStep::eof;
    env_.close_stdin();
    env_.arm_timer(TimerKind::stop_step, config_.stop_grace);
}

void Supervisor::cancel_run_timers() {
    env_.cancel_timer(TimerKind::start_timeout);
    env_.cancel_timer(TimerKind::stable);
    env_.cancel_timer(TimerKind::health);
    env_.cancel_timer(TimerKind::probe);
    env_.cancel_timer(TimerKind::stdout_grace);
}

}  // namespace mcpd
