// A user named in one server's allow_users learns nothing of the others: the status reply
// holds only its servers and no totals or paths, a server it may not use answers exactly
// like one that does not exist, and other users' sessions are not listed. Root keeps the
// helpful errors.
#include <catch2/catch.hpp>

#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

// `text` with every `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// Two servers, "hidden" for root only and "shared" that `user` may use too, on a socket
// every user can reach (so mcpd's own check is all that stands in the way).
void start_two_servers(TestEnv& env, const OtherUser& user) {
    env.write_registry("[daemon]\nsocket_mode = \"0666\"\n\n" + server_toml("hidden") +
                       server_toml("shared", {}, {{"allow_users", "[\"" + user.id() + "\"]"}}));
    env.start_daemon();
    env.wait_state("hidden", "running");
    env.wait_state("shared", "running");
    open_directory(env.dir());
}

RunResult ctl_as(const OtherUser& user, const TestEnv& env, const std::vector<std::string>& args) {
    std::vector<std::string> argv{bin("mcpctl"), "--socket", env.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(user.command(argv));
}

}  // namespace

TEST_CASE("a restricted user's status shows its servers only, without totals or paths",
          "[access]") {
    const OtherUser user;
    TestEnv env("restricted-status");
    start_two_servers(env, user);

    const RunResult machine = ctl_as(user, env, {"--json", "status"});
    INFO(machine.describe());
    REQUIRE(machine.exit_code == 0);
    const json status = json::parse(machine.out);
    REQUIRE(status["servers"].size() == 1);
    CHECK(status["servers"][0]["name"] == "shared");
    const json& daemon = status["daemon"];
    CHECK(daemon["servers"] == 1);  // not 2: "hidden" is not counted
    CHECK(daemon["running"] == 1);
    CHECK_FALSE(daemon.contains("config"));
    CHECK_FALSE(daemon.contains("socket"));
    CHECK(daemon["pid"] == env.daemon_pid());
    CHECK(machine.out.find("hidden") == std::string::npos);
    CHECK(machine.out.find(env.registry()) == std::string::npos);
    CHECK(machine.out.find(env.socket()) == std::string::npos);

    const RunResult text = ctl_as(user, env, {"status"});
    INFO(text.describe());
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("shared") != std::string::npos);
    CHECK(text.out.find("hidden") == std::string::npos);

    // Root still sees everything, paths and totals included.
    const json full = env.status_json();
    CHECK(full["servers"].size() == 2);
    CHECK(full["daemon"]["servers"] == 2);
    CHECK(full["daemon"]["config"] == env.registry());
    CHECK(full["daemon"]["socket"] == env.socket());
}

TEST_CASE("a server a restricted user may not use answers like one that does not exist",
          "[access]") {
    const OtherUser user;
    TestEnv env("restricted-names");
    start_two_servers(env, user);

    const std::vector<std::vector<std::string>> commands = {
        {"start"}, {"stop"},     {"restart", "--wait"}, {"status"},
        {"logs"},  {"sessions"}, {"logs", "-f"}};
    for (const auto& command : commands) {
        for (const bool json_mode : {false, true}) {
            std::vector<std::string> base = command;
            if (json_mode) base.insert(base.begin(), "--json");
            std::vector<std::string> hidden_args = base, missing_args = base;
            hidden_args.push_back("hidden");
            missing_args.push_back("nosuch");
            const RunResult hidden = ctl_as(user, env, hidden_args);
            const RunResult missing = ctl_as(user, env, missing_args);
            INFO(command.front() << (json_mode ? " --json" : "") << "\nhidden: "
                                 << hidden.describe() << "\nnosuch: " << missing.describe());
            CHECK(hidden.exit_code == 1);
            CHECK(hidden.exit_code == missing.exit_code);
            // Byte for byte the same answer, but for the name the user typed.
            CHECK(replaced(hidden.out, "hidden", "nosuch") == missing.out);
            CHECK(replaced(hidden.err, "hidden", "nosuch") == missing.err);
            const std::string said = hidden.out + hidden.err + missing.out + missing.err;
            CHECK(said.find(env.registry()) == std::string::npos);
            CHECK(said.find("known") == std::string::npos);
            CHECK(missing.out.find("hidden") == std::string::npos);
            CHECK(missing.err.find("hidden") == std::string::npos);
            if (json_mode) {
                const json error = json::parse(missing.out)["error"];
                CHECK(error["code"] == "not_found");
                CHECK(error["message"] ==
                      "no server named 'nosuch' that you may use; you may use: shared");
            } else {
                CHECK(missing.err ==
                      "mcpctl: no server named 'nosuch' that you may use; you may use: shared\n");
            }
        }
    }
    // Several names at once: the ones it may not use are not told apart from missing ones.
    const RunResult several = ctl_as(user, env, {"stop", "shared", "hidden", "nosuch"});
    INFO(several.describe());
    CHECK(several.exit_code == 1);
    CHECK(several.err ==
          "mcpctl: no servers named 'hidden', 'nosuch' that you may use; you may use: shared\n");
    CHECK(env.state("hidden") == "running");
    CHECK(env.state("shared") == "running");  // nothing was done

    // Root keeps the helpful answer: the registry and every server's name.
    const RunResult helpful = env.ctl({"start", "nosuch"});
    INFO(helpful.describe());
    CHECK(helpful.exit_code == 1);
    CHECK(helpful.err ==
          "mcpctl: no server named nosuch in " + env.registry() + "; known: hidden, shared\n");
}

TEST_CASE("a restricted user's sessions list holds none of another user's sessions", "[access]") {
    const OtherUser user;
    TestEnv env("restricted-sessions");
    start_two_servers(env, user);
    McpSession on_hidden(env.socket(), "hidden");
    on_hidden.initialize("root-on-hidden");
    McpSession on_shared(env.socket(), "shared");
    on_shared.initialize("root-on-shared");

    const RunResult listed = ctl_as(user, env, {"--json", "sessions"});
    INFO(listed.describe());
    REQUIRE(listed.exit_code == 0);
    // Root's session on a server the user may use is root's: not shown either.
    CHECK(json::parse(listed.out)["sessions"].empty());
    CHECK(listed.out.find("root-on-hidden") == std::string::npos);
    CHECK(listed.out.find("root-on-shared") == std::string::npos);
    CHECK(json::parse(env.ctl({"--json", "sessions"}).out)["sessions"].size() == 2);
}
