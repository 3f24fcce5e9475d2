// The Supervisor's per-server policy beyond the ladder and the restarts: the era probe's timer
// and verdict, the grace after a closed stdout, abandoning pipes, idle_timeout, the stdin
// backlog pause and failing waiting requests; first as a state × event table, then one
// behaviour at a time (the sessions' side is in daemon_supervisor_sessions_test.cpp).
#include <catch2/catch.hpp>
#include <csignal>
#include <optional>
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
using HandshakeStart = EraMemory::Start;
using namespace std::chrono_literals;

namespace {

config::ServerConfig idle_config() {
    config::ServerConfig config = demo_config();
    config.idle_timeout = 300s;
    return config;
}

// The policy events, in order. Those ending in "passes", "expires", "abandoned" or "fires" arm
// their timer the way the daemon does, then deliver it (fired when armed, else stale).
// clang-format off
enum class Pe { sessions_none, sessions_some, child_wanted, probe_wait, probe_cancel, stdout_eof,
                backlog_high, backlog_low, probe_exit, exit_pipes_open, idle_passes,
                probe_expires, stdout_grace_passes, pipes_abandoned, fail_waiting_fires };
// clang-format on

struct PolicyEvent {
    const char* name;
    void (*apply)(Fixture&);
};
const PolicyEvent kPolicyEvents[] = {
    {"on_sessions_changed(0)", [](Fixture& f) { f.sup.on_sessions_changed(0); }},
    {"on_sessions_changed(1)", [](Fixture& f) { f.sup.on_sessions_changed(1); }},
    {"on_child_wanted", [](Fixture& f) { f.sup.on_child_wanted(); }},
    {"on_probe_wait(5s)", [](Fixture& f) { f.sup.on_probe_wait(5s); }},
    {"on_probe_wait(none)", [](Fixture& f) { f.sup.on_probe_wait(std::nullopt); }},
    {"on_stdout_eof", [](Fixture& f) { f.sup.on_stdout_eof(); }},
    {"on_input_backlog(high + 1)",
     [](Fixture& f) { f.sup.on_input_backlog(StdinBacklog::kHighWater + 1); }},
    {"on_input_backlog(low)", [](Fixture& f) { f.sup.on_input_backlog(StdinBacklog::kLowWater); }},
    {"on_probe_exit(1)", [](Fixture& f) { f.sup.on_probe_exit(1); }},
    {"on_exit_pipes_open", [](Fixture& f) { f.sup.on_exit_pipes_open(); }},
    {"idle_timeout passes",
     [](Fixture& f) {
         f.sup.on_sessions_changed(0);
         deliver_timer(f, T::idle);
     }},
    {"the probe expires",
     [](Fixture& f) {
         f.sup.on_probe_wait(5s);
         deliver_timer(f, T::probe);
     }},
    {"the stdout grace passes",
     [](Fixture& f) {
         f.sup.on_stdout_eof();
         deliver_timer(f, T::stdout_grace);
     }},
    {"pipes abandoned",
     [](Fixture& f) {
         f.sup.on_exit_pipes_open();
         deliver_timer(f, T::abandon_pipes);
     }},
    {"fail_waiting fires",
     [](Fixture& f) {
         f.sup.on_child_wanted();
         deliver_timer(f, T::fail_waiting);
     }},
};
constexpr int kPolicyEventCount = sizeof kPolicyEvents / sizeof kPolicyEvents[0];

struct PolicyRow {
    From from;
    Pe event;
    S to;
    bool wanted_up;
    int spawns;
    int stdin_closes;
    std::optional<std::set<T>> armed;  // timers armed afterwards; nullopt: as before
    std::vector<bool> pauses;
    int failed_waiting;
    int fallbacks;
    int abandons;
};

void check_policy_row(Fixture& f, const PolicyRow& row, const std::set<T>& armed_before) {
    const S before = f.sup.state();
    f.env.clear_records();
    kPolicyEvents[static_cast<int>(row.event)].apply(f);
    CHECK(f.sup.state() == row.to);
    CHECK(f.sup.wanted_up() == row.wanted_up);
    CHECK(f.env.spawn_calls == row.spawns);
    CHECK(f.env.handshakes.size() == static_cast<std::size_t>(row.spawns));
    CHECK(f.env.signals.empty());
    CHECK(f.env.stdin_closes == row.stdin_closes);
    CHECK(f.env.armed_timers() == row.armed.value_or(armed_before));
    CHECK(f.env.pauses == row.pauses);
    CHECK(f.env.failed_waiting.size() == static_cast<std::size_t>(row.failed_waiting));
    CHECK(f.env.fallbacks == row.fallbacks);
    CHECK(f.env.abandons == row.abandons);
    if (before == row.to) {
        CHECK(f.env.transitions.empty());
    } else {
        CHECK(f.env.transitions == std::vector<std::pair<S, S>>{{before, row.to}});
    }
}

}  // namespace

TEST_CASE("supervisor: every state × every policy event") {
    using St = std::set<T>;
    // Timers armed afterwards: the state's own, plus the event's.
    const St none, boot{T::start_timeout}, up{T::stable, T::health}, wait{T::backoff},
        ladder{T::stop_step}, idle{T::idle}, boot_idle{T::start_timeout, T::idle},
        up_idle{T::stable, T::health, T::idle}, wait_idle{T::backoff, T::idle},
        boot_probe{T::start_timeout, T::probe}, boot_grace{T::start_timeout, T::stdout_grace},
        up_grace{T::stable, T::health, T::stdout_grace}, fw{T::fail_waiting},
        ab{T::abandon_pipes}, boot_ab{T::start_timeout, T::abandon_pipes},
        up_ab{T::stable, T::health, T::abandon_pipes}, wait_ab{T::backoff, T::abandon_pipes},
        ladder_ab{T::stop_step, T::abandon_pipes};
    const std::optional<St> same;  // as before the event
    const std::vector<bool> P{true};  // sessions paused
    const bool Y = true, N = false;
    // Every pair that does something; a pair not listed changes nothing at all. Columns: from,
    // event, state after, wanted_up after, spawns, stdin closes, timers armed after, pause
    // calls, fail_waiting calls, probe fallbacks, pipe abandons. idle_timeout is 300s.
    // clang-format off
    const std::vector<PolicyRow> rows = {
        {From::starting, Pe::sessions_none, S::starting, Y, 0, 0, boot_idle, {}, 0, 0, 0},
        {From::running, Pe::sessions_none, S::running, Y, 0, 0, up_idle, {}, 0, 0, 0},
        {From::backoff, Pe::sessions_none, S::backoff, Y, 0, 0, wait_idle, {}, 0, 0, 0},
        {From::failed, Pe::sessions_none, S::failed, Y, 0, 0, idle, {}, 0, 0, 0},

        {From::stopped, Pe::child_wanted, S::starting, Y, 1, 0, boot, {}, 0, 0, 0},
        {From::failed, Pe::child_wanted, S::failed, Y, 0, 0, fw, {}, 0, 0, 0},

        {From::starting, Pe::probe_wait, S::starting, Y, 0, 0, boot_probe, {}, 0, 0, 0},

        {From::starting, Pe::stdout_eof, S::starting, Y, 0, 0, boot_grace, {}, 0, 0, 0},
        {From::running, Pe::stdout_eof, S::running, Y, 0, 0, up_grace, {}, 0, 0, 0},

        // The backlog decision depends on the bytes alone.
        {From::stopped, Pe::backlog_high, S::stopped, N, 0, 0, same, P, 0, 0, 0},
        {From::starting, Pe::backlog_high, S::starting, Y, 0, 0, same, P, 0, 0, 0},
        {From::running, Pe::backlog_high, S::running, Y, 0, 0, same, P, 0, 0, 0},
        {From::backoff, Pe::backlog_high, S::backoff, Y, 0, 0, same, P, 0, 0, 0},
        {From::stop_eof, Pe::backlog_high, S::stopping, N, 0, 0, same, P, 0, 0, 0},
        {From::stop_term, Pe::backlog_high, S::stopping, N, 0, 0, same, P, 0, 0, 0},
        {From::stop_kill, Pe::backlog_high, S::stopping, N, 0, 0, same, P, 0, 0, 0},
        {From::failed, Pe::backlog_high, S::failed, Y, 0, 0, same, P, 0, 0, 0},

        {From::starting, Pe::probe_exit, S::starting, Y, 1, 0, boot, {}, 0, 0, 0},
        {From::running, Pe::probe_exit, S::backoff, Y, 0, 0, wait, {}, 0, 0, 0},
        {From::stop_eof, Pe::probe_exit, S::stopped, N, 0, 0, none, {}, 1, 0, 0},
        {From::stop_term, Pe::probe_exit, S::stopped, N, 0, 0, none, {}, 1, 0, 0},
        {From::stop_kill, Pe::probe_exit, S::stopped, N, 0, 0, none, {}, 1, 0, 0},

        {From::stopped, Pe::exit_pipes_open, S::stopped, N, 0, 0, ab, {}, 0, 0, 0},
        {From::starting, Pe::exit_pipes_open, S::starting, Y, 0, 0, boot_ab, {}, 0, 0, 0},
        {From::running, Pe::exit_pipes_open, S::running, Y, 0, 0, up_ab, {}, 0, 0, 0},
        {From::backoff, Pe::exit_pipes_open, S::backoff, Y, 0, 0, wait_ab, {}, 0, 0, 0},
        {From::stop_eof, Pe::exit_pipes_open, S::stopping, N, 0, 0, ladder_ab, {}, 0, 0, 0},
        {From::stop_term, Pe::exit_pipes_open, S::stopping, N, 0, 0, ladder_ab, {}, 0, 0, 0},
        {From::stop_kill, Pe::exit_pipes_open, S::stopping, N, 0, 0, ab, {}, 0, 0, 0},
        {From::failed, Pe::exit_pipes_open, S::failed, Y, 0, 0, ab, {}, 0, 0, 0},

        {From::starting, Pe::idle_passes, S::stopping, N, 0, 1, ladder, {}, 0, 0, 0},
        {From::running, Pe::idle_passes, S::stopping, N, 0, 1, ladder, {}, 0, 0, 0},
        {From::backoff, Pe::idle_passes, S::stopped, N, 0, 0, none, {}, 1, 0, 0},
        {From::failed, Pe::idle_passes, S::stopped, N, 0, 0, none, {}, 1, 0, 0},

        {From::starting, Pe::probe_expires, S::starting, Y, 0, 0, boot, {}, 0, 1, 0},

        {From::starting, Pe::stdout_grace_passes, S::stopping, Y, 0, 1, ladder, {}, 0, 0, 0},
        {From::running, Pe::stdout_grace_passes, S::stopping, Y, 0, 1, ladder, {}, 0, 0, 0},

        {From::stopped, Pe::pipes_abandoned, S::stopped, N, 0, 0, same, {}, 0, 0, 1},
        {From::starting, Pe::pipes_abandoned, S::starting, Y, 0, 0, same, {}, 0, 0, 1},
        {From::running, Pe::pipes_abandoned, S::running, Y, 0, 0, same, {}, 0, 0, 1},
        {From::backoff, Pe::pipes_abandoned, S::backoff, Y, 0, 0, same, {}, 0, 0, 1},
        {From::stop_eof, Pe::pipes_abandoned, S::stopping, N, 0, 0, same, {}, 0, 0, 1},
        {From::stop_term, Pe::pipes_abandoned, S::stopping, N, 0, 0, same, {}, 0, 0, 1},
        {From::stop_kill, Pe::pipes_abandoned, S::stopping, N, 0, 0, same, {}, 0, 0, 1},
        {From::failed, Pe::pipes_abandoned, S::failed, Y, 0, 0, same, {}, 0, 0, 1},

        {From::stopped, Pe::fail_waiting_fires, S::starting, Y, 1, 0, boot, {}, 0, 0, 0},
        {From::failed, Pe::fail_waiting_fires, S::failed, Y, 0, 0, none, {}, 1, 0, 0},
    };
    // clang-format on
    for (int from = 0; from < 8; ++from) {
        for (int event = 0; event < kPolicyEventCount; ++event) {
            INFO(kStarts[from].name << " × " << kPolicyEvents[event].name);
            Fixture f(idle_config());
            kStarts[from].reach(f);
            REQUIRE(f.sup.state() == kStarts[from].state);
            const std::set<T> armed_before = f.env.armed_timers();
            const PolicyRow unchanged{
                static_cast<From>(from), static_cast<Pe>(event), f.sup.state(), f.sup.wanted_up(),
                0, 0, same, {}, 0, 0, 0};
            const PolicyRow* row = &unchanged;
            for (const PolicyRow& r : rows) {
                if (r.from == row->from && r.event == row->event) row = &r;
            }
            check_policy_row(f, *row, armed_before);
        }
    }
}

TEST_CASE("supervisor: the handshake starts as the era memory says") {
    Fixture f;
    f.sup.request_start();
    REQUIRE(f.env.handshakes == std::vector<HandshakeStart>{HandshakeStart::probe});

    SECTION("a modern verdict: known modern from the next process on") {
        f.sup.on_ready(true);
        CHECK(f.sup.era().modern() == true);
        f.sup.on_exit(1);
        f.fire(T::backoff);
        CHECK(f.env.handshakes.back() == HandshakeStart::modern);
    }
    SECTION("a legacy handshake: legacy from the next process on") {
        f.sup.on_ready();
        f.sup.request_restart();
        f.sup.on_exit(0);
        CHECK(f.env.handshakes.back() == HandshakeStart::legacy);
    }
    SECTION("an exit on the probe: legacy at once, with a note") {
        const int pid = f.sup.pid();
        f.sup.on_probe_exit(1);
        CHECK(f.env.handshakes ==
              std::vector<HandshakeStart>{HandshakeStart::probe, HandshakeStart::legacy});
        CHECK(f.sup.era().modern() == false);
        CHECK(f.env.noted("pid " + std::to_string(pid) + " (status 1) exited on the era probe"));
    }
    SECTION("a verdict whose next start fails its handshake is probed again") {
        f.sup.on_ready(true);
        f.sup.request_restart();
        f.sup.on_exit(0);
        REQUIRE(f.env.handshakes.back() == HandshakeStart::modern);
        SECTION("refused") {
            f.sup.on_handshake_failed("the server refused initialize");
        }
        SECTION("silent") {
            f.fire(T::start_timeout);
        }
        CHECK_FALSE(f.sup.era().modern().has_value());
        f.sup.on_exit(0);
        f.fire(T::backoff);
        CHECK(f.env.handshakes.back() == HandshakeStart::probe);
    }
    SECTION("a crash after ready keeps the verdict") {
        f.sup.on_ready(true);
        f.sup.on_exit(-SIGSEGV);
        f.fire(T::backoff);
        CHECK(f.env.handshakes.back() == HandshakeStart::modern);
    }
}

TEST_CASE("supervisor: a pinned era never probes") {
    const auto [era, start] = GENERATE(table<config::Era, HandshakeStart>(
        {{config::Era::legacy, HandshakeStart::legacy},
         {config::Era::modern, HandshakeStart::modern}}));
    config::ServerConfig config = demo_config();
    config.era = era;
    Fixture f(config);
    f.sup.request_start();
    f.sup.on_ready(start == HandshakeStart::legacy);  // the other era: the pin still holds
    f.sup.on_exit(1);
    f.fire(T::backoff);
    CHECK(f.env.handshakes == std::vector<HandshakeStart>{start, start});
}

TEST_CASE("supervisor: start_timeout names the request that went unanswered") {
    config::ServerConfig config = demo_config();
    std::string expected;
    SECTION("legacy: initialize") {
        config.era = config::Era::legacy;
        expected = "no answer to initialize within start_timeout (10s)";
    }
    SECTION("modern: server/discover") {
        config.era = config::Era::modern;
        expected = "no answer to server/discover within start_timeout (10s)";
    }
    SECTION("probing, no answer yet: server/discover") {
        expected = "no answer to server/discover within start_timeout (10s)";
    }
    Fixture f(config);
    f.sup.request_start();
    f.fire(T::start_timeout);
    CHECK(f.sup.error() == expected);
}

TEST_CASE("supervisor: start_timeout after the probe names initialize") {
    Fixture f;
    f.sup.request_start();
    f.sup.on_probe_wait(5s);
    SECTION("the probe was answered (legacy): initialize followed") {
        f.sup.on_probe_wait(std::nullopt);
        f.fire(T::start_timeout);
        CHECK(f.sup.error() == "no answer to initialize within start_timeout (10s)");
    }
    SECTION("the probe went unanswered: initialize was sent after it") {
        f.fire(T::probe);
        f.fire(T::start_timeout);
        CHECK(f.sup.error() ==
              "no answer to initialize within start_timeout (10s), sent after server/discover "
              "went unanswered");
    }
}

TEST_CASE("supervisor: every state, exit step and stop reason has its word") {
    for (int i = 0; i <= static_cast<int>(ServerState::failed); ++i) {
        CHECK(to_string(static_cast<ServerState>(i)) != "?");
    }
    for (int i = 0; i <= static_cast<int>(ExitStep::kill); ++i) {
        CHECK(to_string(static_cast<ExitStep>(i)) != "?");
    }
    for (int i = 0; i <= static_cast<int>(StopReason::stdout_closed); ++i) {
        CHECK(to_string(static_cast<StopReason>(i)) != "?");
    }
    CHECK(to_string(StopReason::era_probe) == "era-probe");
}

TEST_CASE("supervisor: the probe's timer runs only while starting, until the verdict") {
    Fixture f;
    f.sup.request_start();
    f.sup.on_probe_wait(5s);
    CHECK(f.env.last_armed(T::probe) == 5s);
    f.sup.on_probe_wait(2s);  // the child showed life: silence counts from now
    CHECK(f.env.last_armed(T::probe) == 2s);

    SECTION("unanswered: initialize is sent, with a note") {
        f.fire(T::probe);
        CHECK(f.env.fallbacks == 1);
        CHECK(f.env.noted("no answer to server/discover in time: sending initialize"));
        CHECK(f.sup.state() == S::starting);
    }
    SECTION("a verdict already in: nothing is noted") {
        f.env.falls_back = false;
        f.fire(T::probe);
        CHECK(f.env.fallbacks == 1);
        CHECK_FALSE(f.env.noted("server/discover"));
    }
    SECTION("the handshake cancels it") {
        f.sup.on_probe_wait(std::nullopt);
        CHECK_FALSE(f.env.armed(T::probe));
    }
    SECTION("ready cancels it") {
        f.sup.on_ready(true);
        CHECK_FALSE(f.env.armed(T::probe));
        f.sup.on_probe_wait(2s);  // not while running
        CHECK_FALSE(f.env.armed(T::probe));
    }
    SECTION("an exit cancels it") {
        f.sup.on_exit(1);
        CHECK_FALSE(f.env.armed(T::probe));
    }
    SECTION("the ladder cancels it") {
        f.fire(T::start_timeout);
        CHECK_FALSE(f.env.armed(T::probe));
        f.sup.on_timer(T::probe);  // a stale expiry
        CHECK(f.env.fallbacks == 0);
    }
}

TEST_CASE("supervisor: a closed stdout waits kExitAfterStdoutClose for the exit") {
    Fixture f;
    f.run();
    f.env.clear_records();
    f.sup.on_stdout_eof();
    CHECK(f.env.last_armed(T::stdout_grace) == kExitAfterStdoutClose);
    CHECK(kExitAfterStdoutClose == 250ms);
    CHECK(f.sup.state() == S::running);

    SECTION("the exit arrives: a crash, recorded as one") {
        f.sup.on_exit(-SIGSEGV);
        CHECK_FALSE(f.env.armed(T::stdout_grace));
        CHECK(f.sup.last_exit().reason == StopReason::crashed);
        CHECK(f.sup.state() == S::backoff);
    }
    SECTION("no exit: it only closed stdout, a fault that ends it") {
        f.fire(T::stdout_grace);
        CHECK(f.sup.state() == S::stopping);
        CHECK(f.sup.stop_reason() == StopReason::stdout_closed);
        CHECK(f.env.stdin_closes == 1);
        CHECK(f.env.noted("running -> stopping (stdout-closed: closed its stdout"));
    }
    SECTION("an admin stop first: the grace ends with the ladder") {
        f.sup.request_stop();
        CHECK_FALSE(f.env.armed(T::stdout_grace));
        CHECK(f.sup.stop_reason() == StopReason::stopped);
    }
}

TEST_CASE("supervisor: pipes still open at an exit are abandoned after kAbandonPipesAfter") {
    Fixture f;
    f.run();
    f.sup.on_exit(1);
    f.sup.on_exit_pipes_open();
    CHECK(f.env.last_armed(T::abandon_pipes) == kAbandonPipesAfter);
    CHECK(kAbandonPipesAfter == 2s);
    f.env.advance(1s);
    f.sup.on_exit_pipes_open();  // another process: one deadline, from the latest exit
    const TimePoint armed_at = f.env.now();
    f.fire(T::abandon_pipes);
    CHECK(f.env.now() == armed_at + 2s);
    CHECK(f.env.abandons == 1);
}

TEST_CASE("supervisor: every transition and exit is noted as the log tells it") {
    Fixture f;
    f.sup.request_start();
    CHECK(f.env.notes == std::vector<std::string>{"stopped -> starting"});
    f.sup.on_ready();
    f.fire(T::health);
    f.fire(T::health);
    CHECK(f.env.notes.back() ==
          "running -> stopping (unresponsive: no answer to a health ping within 20s)");
    f.fire(T::stop_step);
    f.sup.on_exit(-SIGTERM);
    CHECK(f.env.noted("pid 1000 exited with status -15 (term)"));
    CHECK(f.env.notes.back() == "stopping -> backoff");

    f.env.clear_records();
    f.sup.request_stop();
    f.env.fail_next_spawn("cannot execute '/opt/demo': Permission denied", false);
    f.sup.request_start();
    CHECK(f.env.notes == std::vector<std::string>{
                             "backoff -> stopped",
                             "stopped -> failed: cannot execute '/opt/demo': Permission denied"});
    f.sup.request_stop();
    f.sup.request_start();
    f.sup.request_stop();
    CHECK(f.env.notes.back() == "starting -> stopping (stopped)");
}
