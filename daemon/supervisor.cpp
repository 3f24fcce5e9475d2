#include "daemon/supervisor.h"

#include <csignal>

namespace mcpd {

std::string_view to_string(ServerState state) {
    switch (state) {
        case ServerState::stopped:
            return "stopped";
        case ServerState::starting:
            return "starting";
        case ServerState::running:
            return "running";
        case ServerState::backoff:
            return "backoff";
        case ServerState::stopping:
            return "stopping";
        case ServerState::failed:
            return "failed";
    }
    return "?";
}

std::string_view to_string(ExitStep step) {
    switch (step) {
        case ExitStep::exit:
            return "exit";
        case ExitStep::eof:
            return "eof";
        case ExitStep::term:
            return "term";
        case ExitStep::kill:
            return "kill";
    }
    return "?";
}

std::string_view to_string(StopReason reason) {
    switch (reason) {
        case StopReason::none:
            return "none";
        case StopReason::stopped:
            return "stopped";
        case StopReason::restart:
            return "restart";
        case StopReason::reload:
            return "reload";
        case StopReason::shutdown:
            return "shutdown";
        case StopReason::idle:
            return "idle";
        case StopReason::era_probe:
            return "era-probe";
        case StopReason::crashed:
            return "crashed";
        case StopReason::unresponsive:
            return "unresponsive";
        case StopReason::start_timeout:
            return "start-timeout";
        case StopReason::handshake_failed:
            return "handshake-failed";
        case StopReason::stdout_closed:
            return "stdout-closed";
    }
    return "?";
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

Duration backoff_delay(Duration base, Duration max, unsigned failures) {
    Duration delay = base;
    // Stop doubling before it could overflow: past max / 2 the cap applies anyway.
    for (unsigned i = 1; i < failures && delay < max; ++i) {
        if (delay > max / 2) return max;
        delay *= 2;
    }
    return delay < max ? delay : max;
}

Supervisor::Supervisor(const config::ServerConfig& config, SupervisorEnvironment& env)
    : config_(config), env_(env), state_since_(env.now()) {}

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

void Supervisor::on_ready() {
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

void Supervisor::on_stdout_closed() {
    if (state_ != ServerState::starting && state_ != ServerState::running) return;
    error_ = "closed its stdout while still running";
    begin_stop(StopReason::stdout_closed);
}

void Supervisor::on_exit(int status) {
    const ServerState was = state_;
    const bool was_stopping = was == ServerState::stopping;
    pid_ = -1;
    if (!was_stopping && was != ServerState::starting && was != ServerState::running) return;
    has_last_exit_ = true;
    last_exit_ = LastExit{status, was_stopping ? stop_step_ : ExitStep::exit,
                          was_stopping ? stop_reason_ : StopReason::crashed, env_.now()};
    env_.cancel_timer(TimerKind::stop_step);
    cancel_run_timers();

    if (was_stopping) {
        if (is_fault(stop_reason_)) {
            if (!wanted_up_) {
                set_state(ServerState::stopped);
            } else if (respawn_at_exit_) {
                spawn_now();  // someone asked for a start while it was being ended
            } else if (config_.restart == config::RestartPolicy::never) {
                give_up(error_ + "; restart = \"never\", so run 'mcpctl start " + config_.name +
                        "' to start it again");
            } else {
                schedule_restart();
            }
            return;
        }
        if (wanted_up_) {
            spawn_now();
        } else {
            set_state(ServerState::stopped);
        }
        return;
    }
    const bool clean = clean_exit(status);
    switch (config_.restart) {
        case config::RestartPolicy::never:
            if (clean) {
                wanted_up_ = false;
                set_state(ServerState::stopped);
            } else {
                give_up("exited with status " + std::to_string(status) +
                        " and restart = \"never\"; run 'mcpctl start " + config_.name +
                        "' to start it again");
            }
            return;
        case config::RestartPolicy::on_failure:
            if (clean) {
                wanted_up_ = false;
                set_state(ServerState::stopped);
                return;
            }
            schedule_restart();
            return;
        case config::RestartPolicy::always:
            schedule_restart();
            return;
    }
}

void Supervisor::on_probe_exit(int status) {
    if (state_ != ServerState::starting) {
        on_exit(status);
        return;
    }
    pid_ = -1;
    has_last_exit_ = true;
    last_exit_ = LastExit{status, ExitStep::exit, StopReason::era_probe, env_.now()};
    env_.cancel_timer(TimerKind::start_timeout);
    spawn_now();
}

void Supervisor::on_timer(TimerKind kind) {
    switch (kind) {
        case TimerKind::backoff:
            if (state_ != ServerState::backoff) return;
            ++restarts_;
            spawn_now();
            return;
        case TimerKind::start_timeout:
            if (state_ != ServerState::starting) return;
            error_ = "no answer to initialize within start_timeout (" +
                     format_duration(config_.start_timeout) + ")";
            begin_stop(StopReason::start_timeout);
            return;
        case TimerKind::stable:
            if (state_ == ServerState::running) consecutive_failures_ = 0;
            return;
        case TimerKind::health:
            if (state_ != ServerState::running) return;
            if (ping_outstanding_) {
                error_ =
                    "no answer to a health ping within " + format_duration(config_.health_interval);
                begin_stop(StopReason::unresponsive);
                return;
            }
            ping_outstanding_ = true;
            env_.send_health_ping();
            env_.arm_timer(TimerKind::health, config_.health_interval);
            return;
        case TimerKind::stop_step:
            if (state_ != ServerState::stopping) return;
            if (stop_step_ == ExitStep::eof) {
                env_.signal_group(SIGTERM);
                env_.signal_group(SIGCONT);  // a stopped process cannot act on SIGTERM
                stop_step_ = ExitStep::term;
                env_.arm_timer(TimerKind::stop_step, config_.stop_timeout);
            } else if (stop_step_ == ExitStep::term) {
                env_.signal_group(SIGKILL);
                stop_step_ = ExitStep::kill;
            }
            return;
    }
}

void Supervisor::set_state(ServerState next) {
    if (next == state_) return;
    const ServerState from = state_;
    state_ = next;
    state_since_ = env_.now();
    env_.state_changed(from, next);
}

void Supervisor::spawn_now() {
    respawn_at_exit_ = false;
    ping_outstanding_ = false;
    stop_reason_ = StopReason::none;
    stop_step_ = ExitStep::exit;
    SpawnResult result = env_.spawn();
    if (!result.ok) {
        error_ = std::move(result.error);
        if (result.transient) {
            schedule_retry();
        } else {
            set_state(ServerState::failed);
        }
        return;
    }
    pid_ = result.pid;
    transient_failures_ = 0;
    spawned_at_ = env_.now();
    set_state(ServerState::starting);
    env_.arm_timer(TimerKind::start_timeout, config_.start_timeout);
}

void Supervisor::begin_stop(StopReason reason) {
    stop_reason_ = reason;
    cancel_run_timers();
    set_state(ServerState::stopping);
    stop_step_ = ExitStep::eof;
    env_.close_stdin();
    env_.arm_timer(TimerKind::stop_step, config_.stop_grace);
}

void Supervisor::schedule_restart() {
    ++consecutive_failures_;
    if (!within_start_limit()) {
        // Say what kept going wrong, not only that it did.
        std::string last = error_;
        if (last.empty() && has_last_exit_) {
            last = "exited with status " + std::to_string(last_exit_.status);
        }
        give_up("failed " + std::to_string(failure_times_.size()) + " times within " +
                format_duration(config_.start_limit.interval) + " (start_limit burst " +
                std::to_string(config_.start_limit.burst) + ")" +
                (last.empty() ? "" : "; last: " + last) + "; fix it, then run 'mcpctl start " +
                config_.name + "'");
        return;
    }
    const Duration delay =
        backoff_delay(config_.restart_delay, config_.restart_delay_max, consecutive_failures_);
    next_start_ = env_.now() + delay;
    set_state(ServerState::backoff);
    env_.arm_timer(TimerKind::backoff, delay);
}

void Supervisor::schedule_retry() {
    // The machine ran short (descriptors, processes, memory), not the server: back off and try
    // again for as long as it takes, without counting toward start_limit.
    ++transient_failures_;
    const Duration delay =
        backoff_delay(config_.restart_delay, config_.restart_delay_max, transient_failures_);
    next_start_ = env_.now() + delay;
    set_state(ServerState::backoff);
    env_.arm_timer(TimerKind::backoff, delay);
}

void Supervisor::give_up(std::string why) {
    error_ = std::move(why);
    set_state(ServerState::failed);
}

bool Supervisor::clean_exit(int status) const {
    return status == 0;
}

bool Supervisor::within_start_limit() {
    const TimePoint now = env_.now();
    failure_times_.push_back(now);
    while (!failure_times_.empty() && now - failure_times_.front() > config_.start_limit.interval) {
        failure_times_.pop_front();
    }
    return failure_times_.size() <= config_.start_limit.burst;
}

void Supervisor::forget_failures() {
    restarts_ = 0;
    consecutive_failures_ = 0;
    failure_times_.clear();
    error_.clear();
}

void Supervisor::cancel_run_timers() {
    env_.cancel_timer(TimerKind::start_timeout);
    env_.cancel_timer(TimerKind::stable);
    env_.cancel_timer(TimerKind::health);
}

}  // namespace mcpd
