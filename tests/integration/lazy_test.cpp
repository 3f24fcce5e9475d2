// lazy = true: no process until a request needs one. Sessions are answered from the persisted
// cache (initialize, the lists), the first other request starts the server once however many
// arrive together, the cache outlives mcpd, follows what the server lists, and goes with a
// registry change; an idle server stops without cutting a call.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "call_text.h"
#include "harness.h"
#include "mcp_session.h"
#include "other_user.h"

using namespace integration;
using nlohmann::json;

namespace {

// How many times the daemons of `env` started a server process so far.
std::size_t lazy_starts(const TestEnv& env) {
    return count_of(env.daemon_log(), "-> starting");
}

// The cache files the daemons of `env` wrote.
std::vector<std::string> lazy_cache_files(const TestEnv& env) {
    std::vector<std::string> files;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(env.path("state/cache"), error))
        files.push_back(entry.path().string());
    return files;
}

// Every page of tools/list.
std::vector<std::string> lazy_tool_names(McpSession& session) {
    std::vector<std::string> names;
    json params = json::object();
    for (int page = 0; page < 100; ++page) {
        const McpMessage listed = session.wait_response(session.request("tools/list", params));
        const json& result = listed.json.at("result");
        for (const json& tool : result.at("tools")) names.push_back(tool.at("name"));
        if (!result.contains("nextCursor")) break;
        params = {{"cursor", result.at("nextCursor")}};
    }
    return names;
}

// A first session fills the cache of `name` (its server starts once, cold), and mcpd is
// restarted, so that what follows starts from a cache and no process.
void fill_lazy_cache(TestEnv& env, const std::string& name) {
    {
        McpSession first(env.socket(), name);
        first.initialize("filler");
        CHECK_FALSE(lazy_tool_names(first).empty());
        wait_until("the cache file", 20s, [&] { return !lazy_cache_files(env).empty(); });
    }
    env.daemon().terminate();
    env.drop_daemon();
    env.start_daemon();
}

}  // namespace

TEST_CASE("lazy servers answer from the cache with no process, start once for a call, and keep "
          "the cache across restarts of mcpd",
          "[lazy]") {
    TestEnv env("lazy-cache");
    env.write_registry(server_toml("demo", {}, {{"lazy", "true"}}));
    env.start_daemon();
    // Nothing runs until a session asks.
    CHECK(env.marked_processes().empty());
    CHECK(lazy_starts(env) == 0);
    CHECK(env.ctl({"status"}).out.find("cold (no cache)") != std::string::npos);

    fill_lazy_cache(env, "demo");
    const std::size_t before = lazy_starts(env);
    REQUIRE(before == 1);
    const std::vector<std::string> files = lazy_cache_files(env);
    REQUIRE(files.size() == 1);
    struct stat st {};
    REQUIRE(::stat(files.front().c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat(env.path("state/cache").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);

    // Five sessions initialize and list: no process starts.
    std::vector<std::unique_ptr<McpSession>> sessions;
    for (int i = 0; i < 5; ++i) {
        sessions.push_back(std::make_unique<McpSession>(env.socket(), "demo"));
        const McpMessage init = sessions.back()->initialize("agent-" + std::to_string(i));
        CHECK(init.json.at("result").at("serverInfo").at("name") == "mcpd-demo-server");
        const std::vector<std::string> tools = lazy_tool_names(*sessions.back());
        CHECK(std::find(tools.begin(), tools.end(), "echo") != tools.end());
        const McpMessage prompts = sessions.back()->wait_response(sessions.back()->request("prompts/list"));
        CHECK(prompts.json.at("result").at("prompts").is_array());
        const McpMessage ping = sessions.back()->wait_response(sessions.back()->request("ping"));
        CHECK(ping.json.at("result") == json::object());
    }
    CHECK(lazy_starts(env) == before);
    CHECK(env.marked_processes().empty());
    // Status says so, and counts what the cache answered (initialize, tools/list and
    // prompts/list of each session).
    CHECK(env.ctl({"status"}).out.find("sleeping (cached ") != std::string::npos);
    const json lazy = env.server("demo").at("lazy");
    CHECK(lazy.at("cached").is_number_integer());
    CHECK(lazy.at("answered_from_cache") == 15);
    const RunResult stats = env.ctl({"--json", "stats"});
    REQUIRE(stats.exit_code == 0);
    const json figures = json::parse(stats.out, nullptr, false);
    REQUIRE(figures.is_object());
    CHECK(figures.at("servers").at(0).at("answered_from_cache") == 15);

    // Ten calls at once, two from each session: one start, and every call its own answer.
    std::vector<std::pair<McpSession*, json>> calls;
    for (int round = 0; round < 2; ++round) {
        for (std::size_t i = 0; i < sessions.size(); ++i) {
            const std::string text = "call-" + std::to_string(i) + "-" + std::to_string(round);
            calls.emplace_back(sessions[i].get(), sessions[i]->call_tool("echo", {{"text", text}}));
        }
    }
    for (std::size_t n = 0; n < calls.size(); ++n) {
        const McpMessage answer = calls[n].first->wait_response(calls[n].second);
        CHECK(answer.tool_text() ==
              "call-" + std::to_string(n % sessions.size()) + "-" + std::to_string(n / sessions.size()));
    }
    CHECK(lazy_starts(env) == before + 1);
    CHECK(env.marked_processes().size() == 1);
    // The lists did not change: nobody is told they did.
    for (auto& session : sessions) {
        session->pump(300ms);
        CHECK(session->notifications("notifications/tools/list_changed").empty());
    }
}

TEST_CASE("a lazy server's changed list reaches sessions answered from the cache as list_changed",
          "[lazy]") {
    TestEnv env("lazy-changed");
    const std::string names = env.path("extra-tools");
    env.write_registry(server_toml("demo", {"--extra-tools-file=" + names}, {{"lazy", "true"}}));
    env.start_daemon();
    fill_lazy_cache(env, "demo");

    McpSession session(env.socket(), "demo");
    session.initialize("agent");
    std::vector<std::string> tools = lazy_tool_names(session);
    CHECK(std::find(tools.begin(), tools.end(), "fresh_tool") == tools.end());

    // The server now lists one more tool (its command line is the same, so is its cache key).
    std::ofstream(names) << "fresh_tool\n";
    const McpMessage call = session.wait_response(session.call_tool("echo", {{"text", "wake"}}));
    CHECK(call.tool_text() == "wake");
    const auto told = session.wait_for(
        [](const McpMessage& m) { return m.method() == "notifications/tools/list_changed"; }, 20s);
    REQUIRE(told);
    tools = lazy_tool_names(session);
    CHECK(std::find(tools.begin(), tools.end(), "fresh_tool") != tools.end());

    // The cache holds it now: after a restart of mcpd it is listed with no process.
    env.daemon().terminate();
    env.drop_daemon();
    env.start_daemon();
    const std::size_t starts = lazy_starts(env);
    McpSession later(env.socket(), "demo");
    later.initialize("later");
    tools = lazy_tool_names(later);
    CHECK(std::find(tools.begin(), tools.end(), "fresh_tool") != tools.end());
    CHECK(lazy_starts(env) == starts);
}

TEST_CASE("a lazy server idles out after its last answer, never during a call, and sleeps on",
          "[lazy]") {
    TestEnv env("lazy-idle");
    env.write_registry(server_toml("demo", {}, {{"lazy", "true"}, {"idle_timeout", "\"1s\""}}));
    env.start_daemon();
    fill_lazy_cache(env, "demo");

    McpSession session(env.socket(), "demo");
    session.initialize("agent");
    // A call that runs past idle_timeout is answered in full.
    const McpMessage slow = session.wait_response(
        session.call_tool("slow", {{"steps", 3}, {"interval_ms", 800}}), 30s);
    CHECK_FALSE(slow.is_error());
    CHECK(env.marked_processes().size() == 1);
    // Then it stops, the session stays, and is answered from the cache.
    wait_until("the idle server to stop", 20s, [&] { return env.marked_processes().empty(); });
    const std::size_t starts = lazy_starts(env);
    CHECK_FALSE(lazy_tool_names(session).empty());
    CHECK(lazy_starts(env) == starts);
    CHECK(env.daemon_log().find("answered nothing for 1s") != std::string::npos);
    // And a new call wakes it again.
    CHECK(session.wait_response(session.call_tool("echo", {{"text", "again"}})).tool_text() ==
          "again");
    CHECK(lazy_starts(env) == starts + 1);
}

TEST_CASE("a registry change to a lazy server drops its cache", "[lazy]") {
    TestEnv env("lazy-reload");
    env.write_registry(server_toml("demo", {}, {{"lazy", "true"}}));
    env.start_daemon();
    fill_lazy_cache(env, "demo");
    REQUIRE(lazy_cache_files(env).size() == 1);
    const std::string old_file = lazy_cache_files(env).front();

    env.write_registry(server_toml("demo", {"--tick-ms=60000"}, {{"lazy", "true"}}));
    const RunResult reload = env.ctl({"reload"});
    REQUIRE(reload.exit_code == 0);
    CHECK_FALSE(std::filesystem::exists(old_file));
    // The next session finds no cache: the server starts for it and fills a new one.
    const std::size_t starts = lazy_starts(env);
    McpSession session(env.socket(), "demo");
    session.initialize("agent");
    CHECK_FALSE(lazy_tool_names(session).empty());
    CHECK(lazy_starts(env) == starts + 1);
    wait_until("the new cache file", 20s, [&] {
        const auto files = lazy_cache_files(env);
        return files.size() == 1 && files.front() != old_file;
    });
}

TEST_CASE("a group of lazy servers starts only the member a call reaches", "[lazy][group]") {
    TestEnv env("lazy-group");
    std::string registry;
    for (const char* name : {"alpha", "beta", "gamma"})
        registry += server_toml(name, {"--extra-tool=only_" + std::string(name)}, {{"lazy", "true"}});
    registry += "[groups.all]\nservers = [\"alpha\", \"beta\", \"gamma\"]\n";
    env.write_registry(registry);
    env.start_daemon();
    // Each member's cache is filled once, then mcpd restarts with none running.
    for (const char* name : {"alpha", "beta", "gamma"}) {
        McpSession filler(env.socket(), name);
        filler.initialize("filler");
        CHECK_FALSE(lazy_tool_names(filler).empty());
    }
    wait_until("three cache files", 20s, [&] { return lazy_cache_files(env).size() == 3; });
    env.daemon().terminate();
    env.drop_daemon();
    env.start_daemon();
    const std::size_t starts = lazy_starts(env);

    McpSession group(env.socket(), "all");
    group.initialize("agent");
    const std::vector<std::string> tools = lazy_tool_names(group);
    std::string listed;
    for (const std::string& tool : tools) listed += tool + " ";
    INFO("the group lists: " << listed);
    CHECK(std::find(tools.begin(), tools.end(), "beta__only_beta") != tools.end());
    CHECK(lazy_starts(env) == starts);
    CHECK(env.marked_processes().empty());

    const McpMessage call = group.wait_response(group.call_tool("beta__echo", {{"text", "b"}}));
    CHECK(call.tool_text() == "b");
    CHECK(lazy_starts(env) == starts + 1);
    CHECK(env.marked_processes().size() == 1);
    CHECK(env.state("beta") == "running");
    CHECK(env.state("alpha") == "stopped");
    CHECK(env.state("gamma") == "stopped");
}

TEST_CASE("mcpctl warm fills a cold lazy server's cache, and it sleeps again", "[lazy]") {
    TestEnv env("lazy-warm");
    env.write_registry(server_toml("demo", {}, {{"lazy", "true"}, {"idle_timeout", "\"1s\""}}));
    env.start_daemon();
    CHECK(lazy_cache_files(env).empty());
    const RunResult warm = env.ctl({"warm", "demo"});
    INFO(warm.describe());
    REQUIRE(warm.exit_code == 0);
    CHECK(warm.out.find("demo: running") != std::string::npos);
    wait_until("the cache file", 20s, [&] { return lazy_cache_files(env).size() == 1; });
    wait_until("the warmed server to sleep", 20s, [&] {
        return env.ctl({"status"}).out.find("sleeping (cached ") != std::string::npos;
    });
    CHECK(env.marked_processes().empty());
    // A session is now answered from the cache.
    const std::size_t starts = lazy_starts(env);
    McpSession session(env.socket(), "demo");
    session.initialize("agent");
    CHECK_FALSE(lazy_tool_names(session).empty());
    CHECK(lazy_starts(env) == starts);
    // A bad --timeout is a usage error.
    CHECK(env.ctl({"warm", "demo", "--timeout", "soon"}).exit_code == 2);
}

TEST_CASE("mcpctl cache clear drops a lazy server's cache, for root and mcpd's user only",
          "[lazy][access]") {
    const OtherUser user;
    TestEnv env("lazy-clear");
    const std::string allowed = "[\"" + user.id() + "\"]";
    env.write_registry(kOpenSocket +
                       server_toml("demo", {}, {{"lazy", "true"}, {"allow_users", allowed}}) +
                       server_toml("other", {}, {{"lazy", "true"}}));
    open_directory(env.dir());
    env.start_daemon();
    for (const char* name : {"demo", "other"}) {
        McpSession filler(env.socket(), name);
        filler.initialize("filler");
        CHECK_FALSE(lazy_tool_names(filler).empty());
    }
    wait_until("two cache files", 20s, [&] { return lazy_cache_files(env).size() == 2; });
    env.daemon().terminate();
    env.drop_daemon();
    env.start_daemon();
    CHECK(env.ctl({"status", "demo"}).out.find("sleeping (cached ") != std::string::npos);

    // A user allowed to use the server may not empty the cache every user is served from.
    std::vector<std::string> argv = user.command(
        {bin("mcpctl"), "--socket", env.socket(), "cache", "clear", "demo"});
    const RunResult denied = run_process(argv);
    INFO(denied.describe());
    CHECK(denied.exit_code == 1);
    CHECK(denied.err.find("permission denied") != std::string::npos);
    CHECK(lazy_cache_files(env).size() == 2);

    // A name mcpd does not have changes nothing, and says which ones it has.
    const RunResult unknown = env.ctl({"cache", "clear", "demo", "nosuch"});
    CHECK(unknown.exit_code == 1);
    CHECK(unknown.err.find("nosuch") != std::string::npos);
    CHECK(lazy_cache_files(env).size() == 2);
    CHECK(env.ctl({"cache"}).exit_code == 2);  // no action

    const RunResult cleared = env.ctl({"cache", "clear", "demo"});
    INFO(cleared.describe());
    REQUIRE(cleared.exit_code == 0);
    CHECK(cleared.out == "demo: dropped 1 cache entry\n");
    CHECK(lazy_cache_files(env).size() == 1);
    CHECK(env.ctl({"status", "demo"}).out.find("cold (no cache)") != std::string::npos);
    CHECK(env.ctl({"status", "other"}).out.find("sleeping (cached ") != std::string::npos);

    // Cold: the next session's lists start the server, which fills the cache again.
    const std::size_t starts = lazy_starts(env);
    {
        McpSession session(env.socket(), "demo");
        session.initialize("agent");
        CHECK_FALSE(lazy_tool_names(session).empty());
        CHECK(lazy_starts(env) == starts + 1);
    }
    wait_until("the cache filled again", 20s, [&] { return lazy_cache_files(env).size() == 2; });

    // Without names: every entry.
    const RunResult all = env.ctl({"--json", "cache", "clear"});
    INFO(all.describe());
    REQUIRE(all.exit_code == 0);
    CHECK(json::parse(all.out)["entries"] == 2);
    CHECK(lazy_cache_files(env).empty());
}

TEST_CASE("a sleeping lazy server's sessions are carried across upgrades, answered from the cache, no process started",
          "[lazy][upgrade]") {
    TestEnv env("lazy-upgrade");
    env.write_registry(server_toml("demo", {}, {{"lazy", "true"}}));
    env.start_daemon();
    fill_lazy_cache(env, "demo");
    const std::size_t starts = lazy_starts(env);
    McpSession session(env.socket(), "demo");
    session.initialize("sleepy");
    const std::vector<std::string> tools = lazy_tool_names(session);
    REQUIRE_FALSE(tools.empty());
    REQUIRE(env.marked_processes().empty());
    const json before = env.server("demo").at("lazy");
    for (int round = 0; round < 2; ++round) {
        const RunResult upgraded = env.ctl({"upgrade", "--wait"});
        INFO(upgraded.describe());
        REQUIRE(upgraded.exit_code == 0);
    }
    // Still asleep, its catalog read again from the cache, and its session answered from it.
    CHECK(env.marked_processes().empty());
    CHECK(lazy_starts(env) == starts);
    CHECK(lazy_tool_names(session) == tools);
    const json after = env.server("demo").at("lazy");
    INFO(before.dump() << " then " << after.dump());
    CHECK(after.at("cached") == before.at("cached"));
    CHECK(after.at("answered_from_cache").get<int>() > before.at("answered_from_cache").get<int>());
    // A call wakes it once, in the new process.
    CHECK(call_text(session, "echo", {{"text", "awake"}}) == "awake");
    CHECK(lazy_starts(env) == starts + 1);
}
