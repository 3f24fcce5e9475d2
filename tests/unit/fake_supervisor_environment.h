// A scripted, recording SupervisorEnvironment for the supervisor's unit tests.
//
// The clock only moves when a test says so; spawns succeed (pids from 1000 up) unless a result
// was scripted; the probe's fallback succeeds unless told otherwise; every action the
// supervisor takes is recorded. Timers are one-shot, as in the
// event loop: a test may fire only a timer that is armed, which moves the clock to its deadline.
#pragma once

#include <catch2/catch.hpp>
#include <csignal>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/server/supervisor.h"

namespace mcpd::testing {

using namespace std::chrono_literals;

inline std::string_view to_string(TimerKind kind) {
    switch (kind) {
        case TimerKind::backoff:
            return "backoff";
        case TimerKind::start_timeout:
            return "start_timeout";
        case TimerKind::stable:
            return "stable";
        case TimerKind::health:
            return "health";
        case TimerKind::stop_step:
            return "stop_step";
        case TimerKind::idle:
            return "idle";
        case TimerKind::probe:
            return "probe";
        case TimerKind::stdout_grace:
            return "stdout_grace";
        case TimerKind::abandon_pipes:
            return "abandon_pipes";
        case TimerKind::fail_waiting:
            return "fail_waiting";
    }
    return "?";
}

// A registry entry with every timing spelled out, so tests can tell the durations apart.
inline config::ServerConfig demo_config() {
    config::ServerConfig config;
    config.name = "demo";
    config.command = "demo-server";
    config.restart = config::RestartPolicy::on_failure;
    config.restart_delay = 1s;
    config.restart_delay_max = 60s;
    config.stable_after = 30s;
    config.start_limit = {5, 60s};
    config.start_timeout = 10s;
    config.stop_grace = 2s;
    config.stop_timeout = 3s;
    config.health_interval = 20s;
    return config;
}

class FakeSupervisorEnvironment : public SupervisorEnvironment {
public:
    TimePoint now() const override { return now_; }

    Result<int> spawn() override {
        ++spawn_calls;
        if (scripted_.empty()) return next_pid_++;
        Result<int> result = scripted_.front();
        scripted_.pop_front();
        return result;
    }

    void begin_handshake(EraMemory::Start start) override { handshakes.push_back(start); }
    bool fall_back_to_initialize() override {
        ++fallbacks;
        return falls_back;
    }
    void send_health_ping() override { ++pings; }
    void close_stdin() override { ++stdin_closes; }
    void signal_group(int signo) override { signals.push_back(signo); }
    void abandon_pipes() override { ++abandons; }
    void pause_sessions(bool paused) override { pauses.push_back(paused); }
    void fail_waiting(const std::string& why) override { failed_waiting.push_back(why); }
    void note(std::string_view message) override { notes.emplace_back(message); }

    void arm_timer(TimerKind kind, Duration after) override {
        arms.emplace_back(kind, after);
        deadlines_[kind] = now_ + after;
    }

    void cancel_timer(TimerKind kind) override {
        cancels.push_back(kind);
        deadlines_.erase(kind);
    }

    void state_changed(ServerState from, ServerState to) override {
        transitions.emplace_back(from, to);
    }

    // The next spawn fails with `error`.
    void fail_next_spawn(std::string error, bool transient) {
        scripted_.push_back(Failure{std::move(error), transient});
    }

    void advance(Duration d) { now_ += d; }

    bool armed(TimerKind kind) const { return deadlines_.contains(kind); }

    std::set<TimerKind> armed_timers() const {
        std::set<TimerKind> kinds;
        for (const auto& [kind, deadline] : deadlines_) kinds.insert(kind);
        return kinds;
    }

    // The duration of the most recent arming of `kind`.
    Duration last_armed(TimerKind kind) const {
        for (auto it = arms.rbegin(); it != arms.rend(); ++it) {
            if (it->first == kind) return it->second;
        }
        FAIL("timer " << to_string(kind) << " was never armed");
        return Duration::zero();
    }

    // Every duration `kind` was armed with, in order.
    std::vector<Duration> armed_durations(TimerKind kind) const {
        std::vector<Duration> out;
        for (const auto& [k, after] : arms) {
            if (k == kind) out.push_back(after);
        }
        return out;
    }

    // Let an armed timer expire: the clock moves to its deadline and the supervisor hears it.
    void fire(Supervisor& supervisor, TimerKind kind) {
        INFO("firing the " << to_string(kind) << " timer");
        REQUIRE(armed(kind));
        if (deadlines_[kind] > now_) now_ = deadlines_[kind];
        deadlines_.erase(kind);
        supervisor.on_timer(kind);
    }

    // Forget what happened so far (not the clock, the armed timers or the spawn script).
    void clear_records() {
        spawn_calls = 0;
        pings = 0;
        stdin_closes = 0;
        signals.clear();
        arms.clear();
        cancels.clear();
        transitions.clear();
        handshakes.clear();
        fallbacks = 0;
        abandons = 0;
        pauses.clear();
        failed_waiting.clear();
        notes.clear();
    }

    // Whether a notes line contains `text`.
    bool noted(std::string_view text) const {
        for (const std::string& n : notes) {
            if (n.find(text) != std::string::npos) return true;
        }
        return false;
    }

    bool falls_back = true;  // what fall_back_to_initialize answers

    int spawn_calls = 0;
    int pings = 0;
    int stdin_closes = 0;
    std::vector<EraMemory::Start> handshakes;
    int fallbacks = 0;
    int abandons = 0;
    std::vector<bool> pauses;
    std::vector<std::string> failed_waiting;
    std::vector<std::string> notes;
    std::vector<int> signals;
    std::vector<std::pair<TimerKind, Duration>> arms;
    std::vector<TimerKind> cancels;  // including timers that were not armed
    std::vector<std::pair<ServerState, ServerState>> transitions;

private:
    TimePoint now_ = TimePoint{} + 1000h;
    int next_pid_ = 1000;
    std::deque<Result<int>> scripted_;
    std::map<TimerKind, TimePoint> deadlines_;
};

// A supervisor over a fake environment.
struct SupervisorFixture {
    explicit SupervisorFixture(const config::ServerConfig& config = demo_config())
        : sup(config, env) {}

    // Start it and let the handshake succeed.
    void run() {
        sup.request_start();
        sup.on_ready();
    }
    void fire(TimerKind kind) { env.fire(sup, kind); }
    // Run, then crash with `status`.
    void crash(int status = 1) {
        run();
        sup.on_exit(status);
    }

    FakeSupervisorEnvironment env;
    Supervisor sup;
};

// The vocabulary of the state × event table: every state a test can start from and every
// event it can apply.
enum class From { stopped, starting, running, backoff, stop_eof, stop_term, stop_kill, failed };
// clang-format off
enum class Ev { start, stop, restart, force_kill, ready, handshake_failed, health_reply,
                stdout_closed, exit_0, exit_1, exit_sig9, t_backoff, t_start_timeout, t_stable,
                t_health, t_stop_step };
// clang-format on

// Deliver a timer: fired normally when armed (the clock moves), otherwise as a stale expiry.
inline void deliver_timer(SupervisorFixture& f, TimerKind kind) {
    if (f.env.armed(kind)) {
        f.fire(kind);
    } else {
        f.sup.on_timer(kind);
    }
}

// How to bring a fresh fixture into each From, in order. Stopping comes from an admin stop.
struct Start {
    const char* name;
    ServerState state;
    void (*reach)(SupervisorFixture&);
};
const Start kStarts[] = {
    {"stopped", ServerState::stopped, [](SupervisorFixture&) {}},
    {"starting", ServerState::starting, [](SupervisorFixture& f) { f.sup.request_start(); }},
    {"running", ServerState::running, [](SupervisorFixture& f) { f.run(); }},
    {"backoff", ServerState::backoff, [](SupervisorFixture& f) { f.crash(1); }},
    {"stopping (eof)", ServerState::stopping,
     [](SupervisorFixture& f) {
         f.run();
         f.sup.request_stop();
     }},
    {"stopping (term)", ServerState::stopping,
     [](SupervisorFixture& f) {
         f.run();
         f.sup.request_stop();
         f.fire(TimerKind::stop_step);
     }},
    {"stopping (kill)", ServerState::stopping,
     [](SupervisorFixture& f) {
         f.run();
         f.sup.request_stop();
         f.fire(TimerKind::stop_step);
         f.fire(TimerKind::stop_step);
     }},
    {"failed", ServerState::failed,
     [](SupervisorFixture& f) {
         f.env.fail_next_spawn("cannot execute '/opt/demo': Permission denied", false);
         f.sup.request_start();
     }},
};

// Each Ev, in order.
struct Event {
    const char* name;
    void (*apply)(SupervisorFixture&);
};
const Event kEvents[] = {
    {"request_start", [](SupervisorFixture& f) { f.sup.request_start(); }},
    {"request_stop", [](SupervisorFixture& f) { f.sup.request_stop(); }},
    {"request_restart", [](SupervisorFixture& f) { f.sup.request_restart(); }},
    {"force_kill", [](SupervisorFixture& f) { f.sup.force_kill(); }},
    {"on_ready", [](SupervisorFixture& f) { f.sup.on_ready(); }},
    {"on_handshake_failed", [](SupervisorFixture& f) { f.sup.on_handshake_failed("refused"); }},
    {"on_health_reply", [](SupervisorFixture& f) { f.sup.on_health_reply(); }},
    {"on_stdout_closed", [](SupervisorFixture& f) { f.sup.on_stdout_closed(); }},
    {"on_exit(0)", [](SupervisorFixture& f) { f.sup.on_exit(0); }},
    {"on_exit(1)", [](SupervisorFixture& f) { f.sup.on_exit(1); }},
    {"on_exit(-9)", [](SupervisorFixture& f) { f.sup.on_exit(-SIGKILL); }},
    {"timer backoff", [](SupervisorFixture& f) { deliver_timer(f, TimerKind::backoff); }},
    {"timer start_timeout",
     [](SupervisorFixture& f) { deliver_timer(f, TimerKind::start_timeout); }},
    {"timer stable", [](SupervisorFixture& f) { deliver_timer(f, TimerKind::stable); }},
    {"timer health", [](SupervisorFixture& f) { deliver_timer(f, TimerKind::health); }},
    {"timer stop_step", [](SupervisorFixture& f) { deliver_timer(f, TimerKind::stop_step); }},
};

}  // namespace mcpd::testing

namespace Catch {

template <>
struct StringMaker<mcpd::ServerState> {
    static std::string convert(mcpd::ServerState state) {
        return std::string(mcpd::to_string(state));
    }
};

template <>
struct StringMaker<mcpd::TimerKind> {
    static std::string convert(mcpd::TimerKind kind) {
        return std::string(mcpd::testing::to_string(kind));
    }
};

template <>
struct StringMaker<mcpd::StopReason> {
    static std::string convert(mcpd::StopReason reason) {
        return std::string(mcpd::to_string(reason));
    }
};

template <>
struct StringMaker<mcpd::ExitStep> {
    static std::string convert(mcpd::ExitStep step) { return std::string(mcpd::to_string(step)); }
};

}  // namespace Catch
