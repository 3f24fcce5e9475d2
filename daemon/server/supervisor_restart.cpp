// What follows the end of a process: the restart policy, exponential backoff, retries after a
// transient spawn failure, and the start limit.
#include "daemon/server/supervisor.h"

namespace mcpd {

Duration backoff_delay(Duration base, Duration max, unsigned failures) {
    Duration delay = base;
    // Stop doubling before it could overflow: past max / 2 the cap applies anyway.
    for (unsigned i = 1; i < failures && delay < max; ++i) {
        if (delay > max / 2) return max;
        delay *= 2;
    }
    return delay < max ? delay : max;
}

void Supervisor::ended_by_ladder() {
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
}

void Supervisor::ended_on_its_own(int status) {
    const bool clean = clean_exit(status);
    switch (config_.restart) {
        case config::RestartPolicy::never:
            if (clean) {
                wanted_up_ = false;
                set_state(ServerState::stopped);
            } else if (!error_.empty()) {
                // What may explain it (start_failure_hint) leads.
                give_up(error_ + "; restart = \"never\", so run 'mcpctl start " + config_.name +
                        "' to start it again");
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
    restart_reason_ = why_restarted();
    set_state(ServerState::backoff);
    env_.arm_timer(TimerKind::backoff, delay);
}

std::string Supervisor::why_restarted() const {
    if (!has_last_exit_) return "could not start";
    if (std::string cause = env_.exit_cause(); !cause.empty()) return cause;
    // Ended by mcpd for a fault (a failed health ping, a handshake that never came): that.
    if (last_exit_.reason != StopReason::none && last_exit_.reason != StopReason::crashed)
        return std::string(to_string(last_exit_.reason));
    if (last_exit_.status < 0) return "signal " + std::to_string(-last_exit_.status);
    return "exit " + std::to_string(last_exit_.status);
}

void Supervisor::count_restart() {
    ++restarts_;
    // Reasons are few (an exit status, a signal, a StopReason); a cap keeps it so.
    constexpr std::size_t kMaxReasons = 16;
    const std::string reason = restart_reasons_.size() < kMaxReasons ||
                                       restart_reasons_.contains(restart_reason_)
                                   ? restart_reason_
                                   : std::string("other");
    restart_reasons_[reason] += 1;
}

void Supervisor::schedule_retry() {
    // The machine ran short (descriptors, processes, memory), not the server: back off and try
    // again for as long as it takes, without counting toward start_limit.
    ++transient_failures_;
    const Duration delay =
        backoff_delay(config_.restart_delay, config_.restart_delay_max, transient_failures_);
    next_start_ = env_.now() + delay;
    restart_reason_ = "out of resources";
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
    restart_reasons_.clear();
    consecutive_failures_ = 0;
    failure_times_.clear();
    error_.clear();
}

}  // namespace mcpd
