// The Supervisor's side of the sessions (supervisor_sessions.cpp): idle_timeout, pausing the
// sessions while the child's stdin is backed up, answering waiting requests of a server that
// is not coming, a session wanting a stopped server; and a changed registry entry.
#include <catch2/catch.hpp>
#include <csignal>
#include <string>
#include <vector>

#include "daemon/server/supervisor.h"
#include "fake_supervisor_environment.h"

using namespace mcpd;
using namespace mcpd::testing;
using Fixture = SupervisorFixture;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using S = ServerState;
using T = TimerKind;
using namespace std::chrono_literals;

namespace {

config::ServerConfig with_idle(Duration idle) {
    config::ServerConfig config = demo_config();
    config.idle_timeout = idle;
    return config;
}

}  // namespace

TEST_CASE("supervisor: idle_timeout stops a server once it has had no session that long") {
    Fixture f(with_idle(60s));
    f.run();
    f.sup.on_sessions_changed(1);
    CHECK_FALSE(f.env.armed(T::idle));
    f.sup.on_sessions_changed(0);
    CHECK(f.env.last_armed(T::idle) == 60s);

    SECTION("a session in time keeps it") {
        f.env.advance(59s);
        f.sup.on_sessions_changed(1);
        CHECK_FALSE(f.env.armed(T::idle));
        CHECK(f.sup.state() == S::running);
    }
    SECTION("none: stopped through the ladder, for good") {
        f.fire(T::idle);
        CHECK(f.sup.state() == S::stopping);
        CHECK_FALSE(f.sup.wanted_up());
        CHECK(f.sup.stop_reason() == StopReason::idle);
        CHECK(f.env.noted("no session for idle_timeout (1m): stopping"));
        f.sup.on_exit(0);
        CHECK(f.sup.state() == S::stopped);
        CHECK(f.sup.last_exit().reason == StopReason::idle);
    }
    SECTION("an admin stop first: the expiry changes nothing") {
        f.sup.request_stop();
        f.sup.on_exit(0);
        f.env.clear_records();
        f.fire(T::idle);
        CHECK(f.sup.state() == S::stopped);
        CHECK(f.env.transitions.empty());
    }
}

TEST_CASE("supervisor: no idle timer without idle_timeout, or for a server not wanted up") {
    SECTION("idle_timeout = 0") {
        Fixture f(with_idle(0s));
        f.run();
        f.sup.on_sessions_changed(0);
        CHECK_FALSE(f.env.armed(T::idle));
    }
    SECTION("stopped") {
        Fixture f(with_idle(60s));
        f.sup.on_sessions_changed(0);
        CHECK_FALSE(f.env.armed(T::idle));
    }
}

TEST_CASE("supervisor: sessions pause above the stdin high water and resume at the low water") {
    CHECK(StdinBacklog::kHighWater == 1024 * 1024);
    CHECK(StdinBacklog::kLowWater == 64 * 1024);
    Fixture f;
    f.run();
    f.sup.on_input_backlog(StdinBacklog::kHighWater);
    CHECK(f.env.pauses.empty());
    f.sup.on_input_backlog(StdinBacklog::kHighWater + 1);
    CHECK(f.env.pauses == std::vector<bool>{true});
    CHECK(f.sup.sessions_paused());
    f.sup.on_input_backlog(2 * StdinBacklog::kHighWater);
    f.sup.on_input_backlog(StdinBacklog::kLowWater + 1);
    CHECK(f.env.pauses == std::vector<bool>{true});

    SECTION("drained to the low water") {
        f.sup.on_input_backlog(StdinBacklog::kLowWater);
        CHECK(f.env.pauses == std::vector<bool>{true, false});
        CHECK_FALSE(f.sup.sessions_paused());
        f.sup.on_input_backlog(StdinBacklog::kHighWater + 1);
        CHECK(f.env.pauses == std::vector<bool>{true, false, true});
    }
    SECTION("the process exits: nothing waits any more") {
        f.sup.on_exit(-SIGKILL);
        CHECK(f.env.pauses == std::vector<bool>{true, false});
        CHECK_FALSE(f.sup.sessions_paused());
    }
    SECTION("the process exits on the probe") {
        f.sup.request_restart();
        f.sup.on_exit(0);
        f.sup.on_probe_exit(1);
        CHECK(f.env.pauses == std::vector<bool>{true, false});
    }
}

TEST_CASE("stdin backlog: pause above the high water, resume at the low water, once each") {
    using C = StdinBacklog::Change;
    StdinBacklog backlog;
    CHECK(backlog.queued(0) == C::none);
    CHECK(backlog.gone() == C::none);
    CHECK(backlog.queued(StdinBacklog::kHighWater) == C::none);
    CHECK(backlog.queued(StdinBacklog::kHighWater + 1) == C::pause);
    CHECK(backlog.paused());
    CHECK(backlog.queued(StdinBacklog::kHighWater + 1) == C::none);
    CHECK(backlog.queued(StdinBacklog::kLowWater + 1) == C::none);
    CHECK(backlog.queued(StdinBacklog::kLowWater) == C::resume);
    CHECK_FALSE(backlog.paused());
    CHECK(backlog.queued(StdinBacklog::kLowWater) == C::none);
    CHECK(backlog.queued(StdinBacklog::kHighWater + 1) == C::pause);
    CHECK(backlog.gone() == C::resume);
    CHECK(backlog.gone() == C::none);
}

TEST_CASE("supervisor: requests waiting for a server that failed or stopped are answered") {
    Fixture f;
    SECTION("it fails") {
        f.env.fail_next_spawn("cannot execute '/opt/demo': Permission denied", false);
        f.sup.request_start();
        CHECK(f.env.failed_waiting ==
              std::vector<std::string>{"it failed: cannot execute '/opt/demo': Permission denied"});
    }
    SECTION("it gives up after start_limit") {
        config::ServerConfig config = demo_config();
        config.start_limit = {0, 60s};
        Fixture g(config);
        g.crash(1);
        REQUIRE(g.sup.state() == S::failed);
        REQUIRE(g.env.failed_waiting.size() == 1);
        CHECK_THAT(g.env.failed_waiting[0], StartsWith("it failed: failed 1 times"));
    }
    SECTION("it is stopped") {
        f.run();
        f.sup.request_stop();
        CHECK(f.env.failed_waiting.empty());  // still stopping: a start may yet come
        f.sup.on_exit(0);
        CHECK(f.env.failed_waiting == std::vector<std::string>{"it was stopped"});
    }
    SECTION("not while it backs off: it is coming back") {
        f.crash(1);
        CHECK(f.env.failed_waiting.empty());
    }
}

TEST_CASE("supervisor: a session wanting a failed server is answered on the next turn") {
    Fixture f;
    f.env.fail_next_spawn("cannot execute '/opt/demo': Permission denied", false);
    f.sup.request_start();
    f.env.clear_records();
    f.sup.on_child_wanted();
    f.sup.on_child_wanted();
    CHECK(f.env.armed_durations(T::fail_waiting) == std::vector<Duration>{0ms, 0ms});
    CHECK(f.env.failed_waiting.empty());  // not inside the router's handling of the line

    SECTION("still failed: every waiting request gets the failure and what to do") {
        f.fire(T::fail_waiting);
        CHECK(f.env.failed_waiting ==
              std::vector<std::string>{"it failed: cannot execute '/opt/demo': Permission denied; "
                                       "fix it, then run 'mcpctl start demo'"});
        CHECK(f.sup.state() == S::failed);
    }
    SECTION("started in the meantime: they wait for it") {
        f.sup.request_start();
        f.fire(T::fail_waiting);
        CHECK(f.env.failed_waiting.empty());
    }
}

TEST_CASE("supervisor: a session wanting a stopped server starts it, a running one is left") {
    Fixture f;
    f.sup.on_child_wanted();
    CHECK(f.sup.state() == S::starting);
    CHECK(f.sup.wanted_up());
    CHECK(f.env.noted("starting for a client session"));
    f.sup.on_ready();
    f.env.clear_records();
    f.sup.on_child_wanted();
    CHECK(f.env.spawn_calls == 0);
    CHECK(f.env.notes.empty());
    CHECK(f.env.arms.empty());
}

TEST_CASE("supervisor: a session wanting a server mcpd is stopping for idleness starts it again") {
    Fixture f(with_idle(60s));
    f.run();
    f.sup.on_sessions_changed(0);
    f.fire(T::idle);
    REQUIRE(f.sup.state() == S::stopping);
    f.env.clear_records();
    f.sup.on_child_wanted();
    CHECK(f.sup.state() == S::stopping);  // the ladder runs on: the old process still ends
    CHECK(f.sup.wanted_up());
    CHECK(f.env.spawn_calls == 0);
    CHECK(f.env.noted("wanted again while stopping for idleness: it starts again once stopped"));
    f.sup.on_exit(0);
    CHECK(f.sup.state() == S::starting);
    CHECK(f.env.spawn_calls == 1);
    CHECK(f.env.failed_waiting.empty());
}

TEST_CASE("supervisor: a session wanting a server an admin is stopping does not restart it") {
    Fixture f;
    f.run();
    f.sup.request_stop();
    f.env.clear_records();
    f.sup.on_child_wanted();
    f.sup.on_exit(0);
    CHECK(f.sup.state() == S::stopped);
    CHECK(f.env.spawn_calls == 0);
    CHECK(f.env.failed_waiting == std::vector<std::string>{"it was stopped"});
}

TEST_CASE("supervisor: failure() says what went wrong and what to do, once") {
    Fixture f;
    CHECK(f.sup.failure() == "fix it, then run 'mcpctl start demo'");
    f.env.fail_next_spawn("command 'demo-server' not found in PATH", false);
    f.sup.request_start();
    CHECK(f.sup.failure() ==
          "command 'demo-server' not found in PATH; fix it, then run 'mcpctl start demo'");

    config::ServerConfig config = demo_config();
    config.start_limit = {0, 60s};
    Fixture g(config);
    g.crash(1);
    REQUIRE_THAT(g.sup.error(), Contains("fix it, then run 'mcpctl start demo'"));
    CHECK(g.sup.failure() == g.sup.error());
}

TEST_CASE("supervisor: a changed registry entry restarts, starts, or only replaces access") {
    config::ServerConfig changed = demo_config();
    changed.args = {"--verbose"};
    SECTION("wanted up: restarted through the ladder, the era forgotten") {
        Fixture f;
        f.sup.request_start();
        f.sup.on_ready(true);
        f.sup.apply_config(changed, ConfigChange::restart);
        CHECK(f.sup.state() == S::stopping);
        CHECK(f.sup.stop_reason() == StopReason::reload);
        CHECK(f.sup.config().args == changed.args);
        CHECK_FALSE(f.sup.era().modern().has_value());
        f.sup.on_exit(0);
        CHECK(f.sup.state() == S::starting);
        CHECK(f.env.handshakes.back() == EraMemory::Start::probe);
    }
    SECTION("stopped, autostart: started") {
        Fixture f;
        f.sup.apply_config(changed, ConfigChange::restart);
        CHECK(f.sup.state() == S::starting);
    }
    SECTION("stopped, no autostart: left stopped") {
        Fixture f;
        changed.autostart = false;
        f.sup.apply_config(changed, ConfigChange::restart);
        CHECK(f.sup.state() == S::stopped);
        CHECK(f.sup.config().args == changed.args);
    }
    SECTION("only allow_users: replaced, no restart") {
        Fixture f;
        f.sup.request_start();
        f.sup.on_ready(true);
        changed = demo_config();
        changed.allow_users = {"ann"};
        f.env.clear_records();
        f.sup.apply_config(changed, ConfigChange::access);
        CHECK(f.sup.state() == S::running);
        CHECK(f.env.stdin_closes == 0);
        CHECK(f.sup.config().allow_users == changed.allow_users);
        CHECK(f.sup.era().modern() == true);
        CHECK(f.env.noted("only settings mcpd applies itself changed (allow_users, allow_groups, "
                          "filters, request_log, replay): applied without a restart"));
    }
    SECTION("no change: nothing") {
        Fixture f;
        f.run();
        f.env.clear_records();
        f.sup.apply_config(demo_config(), ConfigChange::none);
        CHECK(f.env.notes.empty());
        CHECK(f.sup.state() == S::running);
    }
}
