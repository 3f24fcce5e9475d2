// `mcpctl logs`: a server's stderr lines from mcpd's ring, `-n`, and `-f` following new ones.
#include <catch2/catch.hpp>

#include "harness.h"
#include "text_lines.h"

using namespace integration;
using nlohmann::json;

namespace {

}  // namespace

TEST_CASE("logs shows a server's stderr and -n limits it", "[logs]") {
    TestEnv env("logs");
    env.write_registry(server_toml("demo", {"--stderr-banner=integration banner 42"}));
    env.start_daemon();
    env.wait_state("demo", "running");

    RunResult all;
    wait_until("the banner is in the logs", 10s, [&] {
        all = env.ctl({"logs", "demo"});
        return all.exit_code == 0 && all.out.find("integration banner 42") != std::string::npos;
    });
    const auto lines = lines_of(all.out);
    INFO("logs:\n" << all.out);
    REQUIRE(lines.size() >= 2);
    CHECK(lines.front() == "integration banner 42");
    // The server's stderr also reaches the daemon log, tagged with its name.
    CHECK(env.daemon().log().find("[demo] integration banner 42") != std::string::npos);

    const RunResult last = env.ctl({"logs", "-n", "1", "demo"});
    INFO(last.describe());
    REQUIRE(last.exit_code == 0);
    CHECK(lines_of(last.out) == std::vector<std::string>{lines.back()});

    const RunResult none = env.ctl({"logs", "--lines", "0", "demo"});
    CHECK(none.exit_code == 0);
    CHECK(none.out.empty());

    const RunResult machine = env.ctl({"--json", "logs", "demo"});
    REQUIRE(machine.exit_code == 0);
    const json parsed = json::parse(machine.out);
    REQUIRE(parsed["lines"].is_array());
    CHECK(parsed["lines"][0] == "integration banner 42");

    CHECK(env.ctl({"logs", "-n", "many", "demo"}).exit_code == 2);
}

TEST_CASE("logs -f receives lines written after it connected", "[logs]") {
    TestEnv env("logs-follow");
    env.write_registry(server_toml(
        "talker", {"-c", "echo first >&2; sleep 1; echo second >&2; exec mcpd-demo-server"}, {},
        "sh"));
    env.start_daemon();
    env.wait_state("talker", "running");
    wait_until("both lines are in the ring", 10s, [&] {
        return env.ctl({"logs", "talker"}).out.find("second") != std::string::npos;
    });

    BackgroundProcess follower({bin("mcpctl"), "--socket", env.socket(), "logs", "-f", "talker"});
    // The recent lines come first: once they are printed, the follower is registered.
    REQUIRE(follower.wait_for_output("second", 10s));
    CHECK(count_of(follower.output(), "first") == 1);
    const std::size_t seen_before = follower.output().size();

    // A restart writes both lines again, "second" a second after "first".
    const auto restarted = Clock::now();
    REQUIRE(env.ctl({"restart", "talker"}).exit_code == 0);
    const bool got_first = follower.wait_for_output("first", 10s, 2);
    const bool got_second = follower.wait_for_output("second", 10s, 2);
    INFO("follower output:\n" << follower.output());
    CHECK(got_first);
    CHECK(got_second);
    WARN("logs -f printed the new 'second' " << ms_since(restarted) << " ms after the restart");
    const std::string fresh = follower.output().substr(seen_before);
    const auto first_at = fresh.find("first\n");
    REQUIRE(first_at != std::string::npos);
    CHECK(fresh.find("second\n", first_at) != std::string::npos);

    // ^C ends the follower with status 0.
    CHECK(follower.stop(SIGINT) == 0);
}
