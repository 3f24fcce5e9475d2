// The Supervisor's side of the sessions: idle_timeout, pausing them while the server's stdin
// is backed up, and answering requests that wait for a server that is not coming.
#include "daemon/server/supervisor.h"

namespace mcpd {

void Supervisor::on_input_backlog(std::size_t queued) {
    pause_sessions(backlog_.queued(queued));
}

void Supervisor::on_sessions_changed(std::size_t count) {
    sessions_ = count;
    if (count == 0 && config_.idle_timeout.count() > 0 && wanted_up_) {
        env_.arm_timer(TimerKind::idle, config_.idle_timeout);
    } else {
        env_.cancel_timer(TimerKind::idle);
    }
}

void Supervisor::on_child_wanted() {
    if (state_ == ServerState::stopped) {
        env_.note("starting for a client session");
        request_start();
    } else if (state_ == ServerState::stopping && stop_reason_ == StopReason::idle) {
        // mcpd itself chose to end it, and a request came before the process was gone: it
        // starts again once the ladder ends instead of leaving the request waiting.
        env_.note("wanted again while stopping for idleness: it starts again once stopped");
        request_start();
    } else if (state_ == ServerState::failed) {
        // A failed server does not come back by itself: answer now, not after start_timeout
        // (on the next turn: this runs inside the router's handling of the line).
        env_.arm_timer(TimerKind::fail_waiting, Duration::zero());
    }
}

std::string Supervisor::failure() const {
    std::string advice = "fix it, then run 'mcpctl start ";
    advice += config_.name;
    advice += '\'';
    if (error_.find(advice) != std::string::npos) return error_;
    if (error_.empty()) return advice;
    std::string out = error_;
    out += "; ";
    out += advice;
    return out;
}

void Supervisor::pause_sessions(StdinBacklog::Change change) {
    if (change == StdinBacklog::Change::pause) env_.pause_sessions(true);
    if (change == StdinBacklog::Change::resume) env_.pause_sessions(false);
}

void Supervisor::on_idle_timeout() {
    if (sessions_ > 0 || !wanted_up_) return;
    std::string why = "no session for idle_timeout (";
    why += format_duration(config_.idle_timeout);
    why += "): stopping";
    env_.note(why);
    request_stop(StopReason::idle);
}

void Supervisor::fail_waiting_if_failed() {
    if (state_ != ServerState::failed) return;
    std::string why = "it failed: ";
    why += failure();
    env_.fail_waiting(why);
}

}  // namespace mcpd
