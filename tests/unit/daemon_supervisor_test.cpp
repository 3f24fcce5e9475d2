#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "daemon/server/supervisor.h"
#include "fake_supervisor_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using Fixture = SupervisorFixture;
using Catch::Matchers::Contains;
using S = ServerState;
using T = TimerKind;
using Policy = config::RestartPolicy;
using namespace std::chrono_literals;

namespace {

struct Row {
    From from;
    Ev event;
    S to;
    bool wanted_up;
    int spawns;
    std::vector<int> signals;
    int stdin_closes;
    int pings;
    std::set<T> armed;  // timers armed afterwards
};

// Apply the row's event to a fixture already in its state and check every effect.
void check_row(Fixture& f, const Row& row) {
    const S before = f.sup.state();
    f.env.clear_records();
    kEvents[static_cast<int>(row.event)].apply(f);
    CHECK(f.sup.state() == row.to);
    CHECK(f.sup.wanted_up() == row.wanted_up);
    CHECK(f.env.spawn_calls == row.spawns);
    CHECK(f.env.signals == row.signals);
    CHECK(f.env.stdin_closes == row.stdin_closes);
    CHECK(f.env.pings == row.pings);
    CHECK(f.env.armed_timers() == row.armed);
    if (before == row.to) {
        CHECK(f.env.transitions.empty());
    } else {
        CHECK(f.env.transitions == std::vector<std::pair<S, S>>{{before, row.to}});
    }
    // A process exists exactly in starting, running and stopping.
    const bool has_process = row.to == S::starting || row.to == S::running || row.to == S::stopping;
    CHECK((f.sup.pid() > 0) == has_process);
}

}  // namespace

TEST_CASE("supervisor: every state × every event") {
    const std::set<T> none, boot{T::start_timeout}, up{T::stable, T::health}, wait{T::backoff},
        ladder{T::stop_step};
    const std::vector<int> no{}, kill{SIGKILL}, term{SIGTERM, SIGCONT};
    const bool Y = true, N = false;
    // Every pair that does something. A pair not listed must change nothing at all: same state,
    // same wanted_up, same armed timers, no spawn, signal, stdin close, ping or transition.
    // Columns: from, event, state after, wanted_up after, spawns, signals, stdin closes, pings,
    // timers armed after. Timer events fire the timer when armed, else arrive stale.
    // clang-format off
    const std::vector<Row> rows = {
        {From::stopped, Ev::start, S::starting, Y, 1, no, 0, 0, boot},
        {From::stopped, Ev::restart, S::starting, Y, 1, no, 0, 0, boot},

        {From::starting, Ev::stop, S::stopping, N, 0, no, 1, 0, ladder},
        {From::starting, Ev::restart, S::stopping, Y, 0, no, 1, 0, ladder},
        {From::starting, Ev::force_kill, S::stopping, N, 0, kill, 1, 0, none},
        {From::starting, Ev::ready, S::running, Y, 0, no, 0, 0, up},
        {From::starting, Ev::handshake_failed, S::stopping, Y, 0, no, 1, 0, ladder},
        {From::starting, Ev::stdout_closed, S::stopping, Y, 0, no, 1, 0, ladder},
        {From::starting, Ev::exit_0, S::stopped, N, 0, no, 0, 0, none},
        {From::starting, Ev::exit_1, S::backoff, Y, 0, no, 0, 0, wait},
        {From::starting, Ev::exit_sig9, S::backoff, Y, 0, no, 0, 0, wait},
        {From::starting, Ev::t_start_timeout, S::stopping, Y, 0, no, 1, 0, ladder},

        {From::running, Ev::stop, S::stopping, N, 0, no, 1, 0, ladder},
        {From::running, Ev::restart, S::stopping, Y, 0, no, 1, 0, ladder},
        {From::running, Ev::force_kill, S::stopping, N, 0, kill, 1, 0, none},
        {From::running, Ev::stdout_closed, S::stopping, Y, 0, no, 1, 0, ladder},
        {From::running, Ev::exit_0, S::stopped, N, 0, no, 0, 0, none},
        {From::running, Ev::exit_1, S::backoff, Y, 0, no, 0, 0, wait},
        {From::running, Ev::exit_sig9, S::backoff, Y, 0, no, 0, 0, wait},
        {From::running, Ev::t_stable, S::running, Y, 0, no, 0, 0, {T::health}},
        {From::running, Ev::t_health, S::running, Y, 0, no, 0, 1, up},

        {From::backoff, Ev::start, S::starting, Y, 1, no, 0, 0, boot},
        {From::backoff, Ev::stop, S::stopped, N, 0, no, 0, 0, none},
        {From::backoff, Ev::restart, S::starting, Y, 1, no, 0, 0, boot},
        {From::backoff, Ev::t_backoff, S::starting, Y, 1, no, 0, 0, boot},

        {From::stop_eof, Ev::start, S::stopping, Y, 0, no, 0, 0, ladder},
        {From::stop_eof, Ev::restart, S::stopping, Y, 0, no, 0, 0, ladder},
        {From::stop_eof, Ev::force_kill, S::stopping, N, 0, kill, 0, 0, none},
        {From::stop_eof, Ev::exit_0, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_eof, Ev::exit_1, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_eof, Ev::exit_sig9, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_eof, Ev::t_stop_step, S::stopping, N, 0, term, 0, 0, ladder},

        {From::stop_term, Ev::start, S::stopping, Y, 0, no, 0, 0, ladder},
        {From::stop_term, Ev::restart, S::stopping, Y, 0, no, 0, 0, ladder},
        {From::stop_term, Ev::force_kill, S::stopping, N, 0, kill, 0, 0, none},
        {From::stop_term, Ev::exit_0, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_term, Ev::exit_1, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_term, Ev::exit_sig9, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_term, Ev::t_stop_step, S::stopping, N, 0, kill, 0, 0, none},

        {From::stop_kill, Ev::start, S::stopping, Y, 0, no, 0, 0, none},
        {From::stop_kill, Ev::restart, S::stopping, Y, 0, no, 0, 0, none},
        {From::stop_kill, Ev::exit_0, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_kill, Ev::exit_1, S::stopped, N, 0, no, 0, 0, none},
        {From::stop_kill, Ev::exit_sig9, S::stopped, N, 0, no, 0, 0, none},

        {From::failed, Ev::start, S::starting, Y, 1, no, 0, 0, boot},
        {From::failed, Ev::stop, S::stopped, N, 0, no, 0, 0, none},
        {From::failed, Ev::restart, S::starting, Y, 1, no, 0, 0, boot},
    };
    // clang-format on
    for (int from = 0; from < 8; ++from) {
        for (int event = 0; event < 16; ++event) {
            INFO(kStarts[from].name << " × " << kEvents[event].name);
            Fixture f;
            kStarts[from].reach(f);
            REQUIRE(f.sup.state() == kStarts[from].state);
            const Row unchanged{static_cast<From>(from),
                                static_cast<Ev>(event),
                                f.sup.state(),
                                f.sup.wanted_up(),
                                0,
                                {},
                                0,
                                0,
                                f.env.armed_timers()};
            const Row* row = &unchanged;
            for (const Row& r : rows) {
                if (r.from == row->from && r.event == row->event) row = &r;
            }
            check_row(f, *row);
        }
    }
}

TEST_CASE("supervisor: the stop ladder is close stdin, SIGTERM and SIGCONT, then SIGKILL") {
    Fixture f;
    f.run();
    f.env.clear_records();
    const TimePoint begun = f.env.now();
    f.sup.request_stop();
    CHECK(f.env.stdin_closes == 1);
    CHECK(f.env.signals.empty());
    CHECK(f.sup.stop_step() == ExitStep::eof);
    CHECK(f.env.last_armed(T::stop_step) == 2s);  // stop_grace

    f.fire(T::stop_step);
    CHECK(f.env.now() == begun + 2s);
    CHECK(f.env.signals == std::vector<int>{SIGTERM, SIGCONT});
    CHECK(f.sup.stop_step() == ExitStep::term);
    CHECK(f.env.last_armed(T::stop_step) == 3s);  // stop_timeout

    f.fire(T::stop_step);
    CHECK(f.env.now() == begun + 5s);
    CHECK(f.env.signals == std::vector<int>{SIGTERM, SIGCONT, SIGKILL});
    CHECK(f.sup.stop_step() == ExitStep::kill);
    CHECK_FALSE(f.env.armed(T::stop_step));
    CHECK(f.env.stdin_closes == 1);

    f.sup.on_exit(-SIGKILL);
    CHECK(f.sup.state() == S::stopped);
    REQUIRE(f.sup.has_exited());
    CHECK(f.sup.last_exit().status == -SIGKILL);
    CHECK(f.sup.last_exit().step == ExitStep::kill);
    CHECK(f.sup.last_exit().reason == StopReason::stopped);
    CHECK(f.sup.last_exit().at == begun + 5s);
    CHECK(f.sup.state_since() == begun + 5s);
    CHECK(f.sup.pid() == -1);
}

TEST_CASE("supervisor: an exit during the ladder records the step it reached and the reason") {
    const auto [steps_fired, step, status] = GENERATE(table<int, ExitStep, int>(
        {{0, ExitStep::eof, 0}, {1, ExitStep::term, -SIGTERM}, {2, ExitStep::kill, -SIGKILL}}));
    Fixture f;
    f.run();
    f.sup.request_stop(StopReason::shutdown);
    for (int i = 0; i < steps_fired; ++i) f.fire(T::stop_step);
    f.sup.on_exit(status);
    CHECK(f.sup.state() == S::stopped);
    CHECK(f.sup.last_exit().status == status);
    CHECK(f.sup.last_exit().step == step);
    CHECK(f.sup.last_exit().reason == StopReason::shutdown);
    CHECK(f.env.armed_timers().empty());
}

TEST_CASE("supervisor: force_kill of a running server ends it for good") {
    Fixture f;
    f.run();
    f.sup.force_kill();
    CHECK(f.env.signals == std::vector<int>{SIGKILL});
    CHECK_FALSE(f.sup.wanted_up());
    f.sup.on_exit(-SIGKILL);
    CHECK(f.sup.state() == S::stopped);
    CHECK(f.env.spawn_calls == 1);
    CHECK(f.sup.last_exit().reason == StopReason::shutdown);
}

TEST_CASE("supervisor: the restart policy decides what follows an exit of its own") {
    const auto [policy, status, expected] = GENERATE(table<Policy, int, S>({
        {Policy::always, 0, S::backoff},
        {Policy::always, 3, S::backoff},
        {Policy::always, -SIGSEGV, S::backoff},
        {Policy::on_failure, 0, S::stopped},
        {Policy::on_failure, 3, S::backoff},
        {Policy::on_failure, -SIGSEGV, S::backoff},
        {Policy::never, 0, S::stopped},
        {Policy::never, 3, S::failed},
        {Policy::never, -SIGSEGV, S::failed},
    }));
    INFO("restart = " << config::to_string(policy) << ", status " << status);
    config::ServerConfig config = demo_config();
    config.restart = policy;
    Fixture f(config);
    f.crash(status);
    CHECK(f.sup.state() == expected);
    CHECK(f.env.spawn_calls == 1);
    CHECK(f.env.armed(T::backoff) == (expected == S::backoff));
    CHECK(f.sup.last_exit().status == status);
    CHECK(f.sup.last_exit().step == ExitStep::exit);
    CHECK(f.sup.last_exit().reason == StopReason::crashed);
    if (expected == S::stopped) CHECK_FALSE(f.sup.wanted_up());
    if (expected == S::backoff) CHECK(f.sup.consecutive_failures() == 1);
}

TEST_CASE("supervisor: restart = never gives up on an unclean exit with a sentence") {
    config::ServerConfig config = demo_config();
    config.restart = Policy::never;
    Fixture f(config);
    f.crash(3);
    CHECK(f.sup.state() == S::failed);
    CHECK_THAT(f.sup.error(), Contains("exited with status 3") && Contains("never") &&
                                  Contains("mcpctl start demo"));
    CHECK(f.env.armed_timers().empty());
    f.sup.request_start();
    CHECK(f.sup.state() == S::starting);
    CHECK(f.sup.error().empty());
}

TEST_CASE("supervisor: restart = never does not restart a server it had to end") {
    config::ServerConfig config = demo_config();
    config.restart = Policy::never;
    Fixture f(config);
    f.sup.request_start();
    SECTION("start timeout") {
        f.fire(T::start_timeout);
    }
    SECTION("handshake failure") {
        f.sup.on_handshake_failed("refused initialize");
    }
    SECTION("unresponsive") {
        f.sup.on_ready();
        f.fire(T::health);
        f.fire(T::health);
    }
    SECTION("stdout closed") {
        f.sup.on_ready();
        f.sup.on_stdout_closed();
    }
    REQUIRE(f.sup.state() == S::stopping);
    f.sup.on_exit(-SIGTERM);
    CHECK(f.sup.state() == S::failed);
    CHECK_FALSE(f.env.armed(T::backoff));
    CHECK(f.env.spawn_calls == 1);
    CHECK_FALSE(f.sup.error().empty());
}

TEST_CASE("supervisor: restart delays double from restart_delay up to restart_delay_max") {
    config::ServerConfig config = demo_config();
    config.restart = Policy::always;
    config.start_limit = {100, 60s};
    Fixture f(config);
    std::vector<Duration> delays;
    f.crash();
    for (int i = 0; i < 8; ++i) {
        CHECK(f.sup.next_start() == f.env.now() + f.env.last_armed(T::backoff));
        f.fire(T::backoff);
        f.sup.on_ready();
        f.sup.on_exit(1);
    }
    CHECK(f.env.armed_durations(T::backoff) ==
          std::vector<Duration>{1s, 2s, 4s, 8s, 16s, 32s, 60s, 60s, 60s});
    CHECK(f.sup.consecutive_failures() == 9);
    CHECK(f.sup.restarts() == 8);
}

TEST_CASE("supervisor: backoff_delay is base × 2^(failures-1), capped") {
    CHECK(backoff_delay(1s, 60s, 1) == 1s);
    CHECK(backoff_delay(1s, 60s, 2) == 2s);
    CHECK(backoff_delay(1s, 60s, 3) == 4s);
    CHECK(backoff_delay(1s, 60s, 6) == 32s);
    CHECK(backoff_delay(1s, 60s, 7) == 60s);
    CHECK(backoff_delay(500ms, 5s, 4) == 4s);
    CHECK(backoff_delay(500ms, 5s, 5) == 5s);
    CHECK(backoff_delay(3s, 3s, 10) == 3s);
    CHECK(backoff_delay(1s, 60s, 0) == 1s);
    CHECK(backoff_delay(1s, 60s, 64) == 60s);
    CHECK(backoff_delay(1ms, 24h, 1000) == 24h);
    CHECK(backoff_delay(1s, 60s, std::numeric_limits<unsigned>::max()) == 60s);
}

TEST_CASE("supervisor: backoff_delay does not overflow under the largest cap") {
    const Duration huge = Duration::max();
    for (unsigned failures : {50U, 54U, 55U, 62U, 64U, 100U, 100000U}) {
        INFO("failures " << failures);
        const Duration delay = backoff_delay(1s, huge, failures);
        CHECK(delay >= 1s);
        CHECK(delay <= huge);
    }
    CHECK(backoff_delay(1s, huge, 100) == huge);
}

TEST_CASE("supervisor: stable_after of running resets the restart delay") {
    Fixture f;
    f.crash();
    f.fire(T::backoff);
    f.sup.on_ready();
    f.sup.on_exit(1);
    CHECK(f.env.last_armed(T::backoff) == 2s);
    f.fire(T::backoff);
    f.sup.on_ready();

    SECTION("a crash after stable_after starts again from restart_delay") {
        CHECK(f.env.last_armed(T::stable) == 30s);
        f.fire(T::stable);
        CHECK(f.sup.consecutive_failures() == 0);
        f.sup.on_exit(1);
        CHECK(f.env.last_armed(T::backoff) == 1s);
    }
    SECTION("a crash before stable_after keeps doubling") {
        f.env.advance(29s);
        f.sup.on_exit(1);
        CHECK(f.env.last_armed(T::backoff) == 4s);
        CHECK(f.sup.consecutive_failures() == 3);
    }
}

TEST_CASE("supervisor: a manual start or restart forgets earlier failures") {
    Fixture f;
    f.crash();
    f.fire(T::backoff);
    f.sup.on_ready();
    f.sup.on_exit(1);
    REQUIRE(f.sup.consecutive_failures() == 2);
    REQUIRE(f.sup.restarts() == 1);

    SECTION("start") {
        f.sup.request_start();
    }
    SECTION("restart") {
        f.sup.request_restart();
    }
    CHECK(f.sup.state() == S::starting);
    CHECK_FALSE(f.env.armed(T::backoff));
    CHECK(f.sup.consecutive_failures() == 0);
    CHECK(f.sup.restarts() == 0);
    f.sup.on_ready();
    f.sup.on_exit(1);
    CHECK(f.env.last_armed(T::backoff) == 1s);
}

TEST_CASE("supervisor: more than start_limit.burst failures within the interval gives up") {
    config::ServerConfig config = demo_config();
    config.start_limit = {3, 60s};
    Fixture f(config);
    f.crash();
    for (int i = 0; i < 2; ++i) {
        f.fire(T::backoff);
        f.sup.on_ready();
        f.sup.on_exit(1);
    }
    CHECK(f.sup.state() == S::backoff);  // exactly `burst` failures are allowed
    f.fire(T::backoff);
    f.sup.on_ready();
    f.sup.on_exit(1);
    CHECK(f.sup.state() == S::failed);
    CHECK(f.env.spawn_calls == 4);
    CHECK(f.env.armed_timers().empty());
    CHECK_THAT(f.sup.error(), Contains("4 times") && Contains("1m") && Contains("start_limit") &&
                                  Contains("burst 3") && Contains("mcpctl start demo"));
    f.sup.request_start();
    CHECK(f.sup.state() == S::starting);
    CHECK(f.sup.error().empty());
}

TEST_CASE("supervisor: failures spread wider than start_limit.interval never give up") {
    config::ServerConfig config = demo_config();
    config.start_limit = {2, 10s};
    config.stable_after = 0s;
    Fixture f(config);
    f.run();
    for (int i = 0; i < 10; ++i) {
        f.env.advance(11s);
        f.sup.on_exit(1);
        REQUIRE(f.sup.state() == S::backoff);
        f.fire(T::backoff);
        f.sup.on_ready();
    }
    CHECK(f.sup.state() == S::running);
    CHECK(f.sup.consecutive_failures() == 10);
    CHECK_FALSE(f.env.armed(T::stable));
}

TEST_CASE("supervisor: a spawn that cannot work fails once, with the error, and stays failed") {
    Fixture f;
    int spawns = 1;
    SECTION("on a manual start") {
        f.env.fail_next_spawn("cannot execute '/opt/demo': Permission denied", false);
        f.sup.request_start();
    }
    SECTION("on a restart after a crash") {
        f.crash();
        f.env.fail_next_spawn("cannot execute '/opt/demo': Permission denied", false);
        f.fire(T::backoff);
        spawns = 2;
    }
    CHECK(f.sup.state() == S::failed);
    CHECK(f.sup.error() == "cannot execute '/opt/demo': Permission denied");
    CHECK(f.env.spawn_calls == spawns);
    CHECK(f.env.armed_timers().empty());
    CHECK(f.sup.pid() == -1);
}

TEST_CASE("supervisor: a transient spawn failure is retried after the delay") {
    Fixture f;
    f.env.fail_next_spawn("cannot fork: Resource temporarily unavailable", true);
    f.sup.request_start();
    CHECK(f.sup.state() == S::backoff);
    CHECK(f.sup.error() == "cannot fork: Resource temporarily unavailable");
    CHECK(f.env.last_armed(T::backoff) == 1s);
    f.fire(T::backoff);
    CHECK(f.sup.state() == S::starting);
    CHECK(f.env.spawn_calls == 2);
    CHECK(f.sup.restarts() == 1);
}

TEST_CASE("supervisor: no handshake within start_timeout ends the process, then backs off") {
    Fixture f;
    const TimePoint t0 = f.env.now();
    f.sup.request_start();
    CHECK(f.sup.spawned_at() == t0);
    CHECK(f.env.last_armed(T::start_timeout) == 10s);
    f.fire(T::start_timeout);
    CHECK(f.sup.state() == S::stopping);
    CHECK(f.env.stdin_closes == 1);
    CHECK_THAT(f.sup.error(), Contains("start_timeout") && Contains("10s"));
    f.sup.on_exit(0);
    CHECK(f.sup.state() == S::backoff);
    CHECK(f.sup.last_exit().reason == StopReason::start_timeout);
    CHECK(f.sup.last_exit().step == ExitStep::eof);
    CHECK(f.sup.consecutive_failures() == 1);
    f.fire(T::backoff);
    CHECK(f.sup.state() == S::starting);
    CHECK(f.env.spawn_calls == 2);
}

TEST_CASE("supervisor: a failed handshake ends the process, then backs off") {
    Fixture f;
    f.sup.request_start();
    f.env.clear_records();
    f.sup.on_handshake_failed("the server refused initialize: bad version");
    CHECK(f.sup.state() == S::stopping);
    CHECK_FALSE(f.env.armed(T::start_timeout));
    CHECK(std::count(f.env.cancels.begin(), f.env.cancels.end(), T::start_timeout) == 1);
    CHECK(f.sup.error() == "the server refused initialize: bad version");
    f.fire(T::stop_step);
    f.sup.on_exit(-SIGTERM);
    CHECK(f.sup.state() == S::backoff);
    CHECK(f.sup.last_exit().reason == StopReason::handshake_failed);
    CHECK(f.sup.last_exit().step == ExitStep::term);
    CHECK(f.sup.error() == "the server refused initialize: bad version");
}

TEST_CASE("supervisor: health pings: answered is fine, unanswered by the next tick restarts") {
    Fixture f;
    f.run();
    f.fire(T::health);
    CHECK(f.env.pings == 1);
    CHECK(f.env.last_armed(T::health) == 20s);
    f.sup.on_health_reply();
    f.fire(T::health);
    CHECK(f.sup.state() == S::running);
    CHECK(f.env.pings == 2);
    CHECK(f.env.stdin_closes == 0);

    f.fire(T::health);  // the second ping was never answered
    CHECK(f.sup.state() == S::stopping);
    CHECK(f.env.pings == 2);
    CHECK(f.env.stdin_closes == 1);
    CHECK_THAT(f.sup.error(), Contains("health ping"));
    f.fire(T::stop_step);
    f.sup.on_exit(-SIGTERM);
    CHECK(f.sup.last_exit().reason == StopReason::unresponsive);
    CHECK(f.sup.state() == S::backoff);
    f.fire(T::backoff);
    CHECK(f.sup.state() == S::starting);
    CHECK(f.sup.restarts() == 1);
}

TEST_CASE("supervisor: a ping left over from an earlier process does not count against the next") {
    Fixture f;
    f.run();
    f.fire(T::health);  // unanswered when the admin restarts it
    f.sup.request_restart();
    f.sup.on_exit(0);
    f.sup.on_ready();
    f.fire(T::health);
    CHECK(f.sup.state() == S::running);
    CHECK(f.env.pings == 2);
}

TEST_CASE("supervisor: stdout closed while running ends the process with its reason") {
    Fixture f;
    f.run();
    f.sup.on_stdout_closed();
    CHECK(f.sup.state() == S::stopping);
    CHECK(f.env.stdin_closes == 1);
    CHECK_THAT(f.sup.error(), Contains("stdout"));
    f.sup.on_stdout_closed();  // seen again while stopping: nothing more to do
    CHECK(f.env.stdin_closes == 1);
    f.sup.on_exit(0);
    CHECK(f.sup.last_exit().reason == StopReason::stdout_closed);
    CHECK(f.sup.state() == S::backoff);
}

TEST_CASE("supervisor: a restart runs the ladder and respawns at once on exit") {
    Fixture f;
    f.run();
    // The recorded reason stays the fault when one started the ladder.
    StopReason expected = StopReason::restart;
    SECTION("while running") {}
    SECTION("during a fault's ladder") {
        f.sup.on_stdout_closed();
        expected = StopReason::stdout_closed;
    }
    f.sup.request_restart();
    CHECK(f.sup.state() == S::stopping);
    CHECK(f.env.stdin_closes == 1);
    f.sup.on_exit(0);
    CHECK(f.sup.state() == S::starting);
    CHECK(f.env.spawn_calls == 2);
    CHECK(f.sup.pid() == 1001);
    CHECK_FALSE(f.env.armed(T::backoff));
    CHECK(f.sup.consecutive_failures() == 0);
    CHECK(f.sup.restarts() == 0);
    CHECK(f.sup.last_exit().reason == expected);
}

TEST_CASE("supervisor: a start during an admin stop brings it back after the exit") {
    Fixture f;
    f.run();
    f.sup.request_stop();
    f.sup.request_start();
    CHECK(f.sup.state() == S::stopping);
    CHECK(f.env.spawn_calls == 1);
    f.sup.on_exit(0);
    CHECK(f.sup.state() == S::starting);
    CHECK(f.env.spawn_calls == 2);
}

TEST_CASE("supervisor: a stop during a restart's ladder stays stopped") {
    Fixture f;
    f.run();
    f.sup.request_restart();
    f.sup.request_stop();
    f.fire(T::stop_step);
    f.sup.on_exit(-SIGTERM);
    CHECK(f.sup.state() == S::stopped);
    CHECK(f.env.spawn_calls == 1);
    CHECK_FALSE(f.sup.wanted_up());
    CHECK(f.env.armed_timers().empty());
}

TEST_CASE("supervisor: zero stable_after and health_interval arm no timers") {
    config::ServerConfig config = demo_config();
    config.stable_after = 0s;
    config.health_interval = 0s;
    Fixture f(config);
    f.run();
    CHECK(f.env.armed_timers().empty());
}

TEST_CASE("supervisor: a changed config applies to the next spawn and the next ladder") {
    Fixture f;
    f.run();
    config::ServerConfig changed = demo_config();
    changed.stop_grace = 7s;
    changed.start_timeout = 45s;
    f.sup.set_config(changed);
    f.sup.request_restart(StopReason::reload);
    CHECK(f.env.last_armed(T::stop_step) == 7s);
    f.sup.on_exit(0);
    CHECK(f.env.last_armed(T::start_timeout) == 45s);
    CHECK(f.sup.last_exit().reason == StopReason::reload);
}

TEST_CASE("supervisor: names of states, steps and reasons") {
    CHECK(to_string(S::backoff) == "backoff");
    CHECK(to_string(S::failed) == "failed");
    CHECK(to_string(ExitStep::term) == "term");
    CHECK(to_string(StopReason::start_timeout) == "start-timeout");
    CHECK(to_string(StopReason::handshake_failed) == "handshake-failed");
    CHECK(to_string(StopReason::stdout_closed) == "stdout-closed");
    CHECK(to_string(StopReason::unresponsive) == "unresponsive");
}

TEST_CASE("supervisor: transient spawn failures never count toward start_limit") {
    // A crash while descriptors ran out used to end in `failed` for good: every retry failed
    // with EMFILE and counted as one more failure.
    Fixture f;
    f.crash();
    const unsigned burst = f.sup.config().start_limit.burst;
    std::vector<Duration> delays;
    for (unsigned i = 0; i < burst * 3; ++i) {
        f.env.fail_next_spawn("cannot create pipes for the server: Too many open files", true);
        f.fire(T::backoff);
        REQUIRE(f.sup.state() == S::backoff);
        delays.push_back(f.env.last_armed(T::backoff));
    }
    CHECK(f.sup.error() == "cannot create pipes for the server: Too many open files");
    // Backing off all the same, up to restart_delay_max.
    CHECK(delays.front() == 1s);
    CHECK(delays.back() == f.sup.config().restart_delay_max);
    // Descriptors are back: it starts without `mcpctl start`.
    f.fire(T::backoff);
    CHECK(f.sup.state() == S::starting);
    f.sup.on_ready();
    CHECK(f.sup.state() == S::running);
}

TEST_CASE("supervisor: an exit on the era probe starts again at once and is not a crash") {
    config::ServerConfig config = demo_config();
    config.start_limit = {1, 60s};
    Fixture f(config);
    f.sup.request_start();
    f.env.advance(3s);
    f.env.clear_records();
    // Many times over, even past start_limit: no failure counted, no backoff.
    for (int i = 0; i < 3; ++i) {
        f.sup.on_probe_exit(1);
        REQUIRE(f.sup.state() == S::starting);
    }
    CHECK(f.env.spawn_calls == 3);
    CHECK(f.env.transitions.empty());  // starting throughout
    CHECK(f.env.armed_timers() == std::set<T>{T::start_timeout});
    CHECK(f.env.last_armed(T::start_timeout) == 10s);  // the new process gets all of it
    CHECK(f.sup.pid() > 0);
    CHECK(f.sup.restarts() == 0);
    CHECK(f.sup.consecutive_failures() == 0);
    CHECK(f.sup.error().empty());
    REQUIRE(f.sup.has_exited());
    CHECK(f.sup.last_exit().reason == StopReason::era_probe);
    CHECK(f.sup.last_exit().step == ExitStep::exit);
    CHECK(f.sup.last_exit().status == 1);
    CHECK_FALSE(is_fault(StopReason::era_probe));
    CHECK(to_string(StopReason::era_probe) == "era-probe");

    // The legacy start then runs; a real crash afterwards is the first failure counted.
    f.sup.on_ready();
    CHECK(f.sup.state() == S::running);
    f.sup.on_exit(1);
    CHECK(f.sup.state() == S::backoff);
    CHECK(f.sup.consecutive_failures() == 1);
    CHECK(f.sup.last_exit().reason == StopReason::crashed);
}

TEST_CASE("supervisor: an exit on the probe outside starting is an ordinary exit") {
    Fixture f;
    SECTION("running: a crash") {
        f.run();
        f.sup.on_probe_exit(1);
        CHECK(f.sup.state() == S::backoff);
        CHECK(f.sup.last_exit().reason == StopReason::crashed);
    }
    SECTION("stopping: the ladder's end") {
        f.run();
        f.sup.request_stop();
        f.sup.on_probe_exit(0);
        CHECK(f.sup.state() == S::stopped);
        CHECK(f.sup.last_exit().reason == StopReason::stopped);
    }
}
