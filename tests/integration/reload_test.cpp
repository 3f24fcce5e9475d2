// Reloading the registry with `mcpctl reload` and SIGHUP: added, removed, changed and
// unchanged servers, and a broken registry that changes nothing.
#include <catch2/catch.hpp>
#include <cstdio>

#include "harness.h"

using namespace integration;
using nlohmann::json;

namespace {

// name -> pid of every listed server.
std::map<std::string, pid_t> pids_of(const TestEnv& env) {
    std::map<std::string, pid_t> pids;
    const json status = env.status_json();
    for (const json& s : status["servers"]) {
        if (s["pid"].is_number_integer()) pids[s["name"]] = s["pid"].get<pid_t>();
    }
    return pids;
}

std::vector<std::string> names_of(const TestEnv& env) {
    std::vector<std::string> names;
    const json status = env.status_json();
    for (const json& s : status["servers"]) names.push_back(s["name"]);
    return names;
}

}  // namespace

TEST_CASE("reload applies added, removed and changed servers and keeps the rest", "[reload]") {
    TestEnv env("reload");
    env.write_registry(server_toml("a") + server_toml("b") + server_toml("c"));
    DaemonProcess& daemon = env.start_daemon();
    for (const char* name : {"a", "b", "c"}) env.wait_state(name, "running");
    const auto before = pids_of(env);
    REQUIRE(before.size() == 3);

    env.write_registry(server_toml("b") + server_toml("c", {"--stderr-banner=c was changed"}) +
                       server_toml("d"));
    const RunResult reload = env.ctl({"reload"});
    INFO(reload.describe());
    REQUIRE(reload.exit_code == 0);
    CHECK(reload.out.find("added: d\n") != std::string::npos);
    CHECK(reload.out.find("removed: a\n") != std::string::npos);
    CHECK(reload.out.find("changed: c\n") != std::string::npos);
    CHECK(reload.out.find("unchanged: b\n") != std::string::npos);

    env.wait_state("d", "running");
    wait_until("c runs a new process", 10s, [&] {
        const json c = env.server("c");
        return c["state"] == "running" && c["pid"].is_number_integer() &&
               c["pid"].get<pid_t>() != before.at("c");
    });
    wait_until("a's process has ended", 10s, [&] { return !process_alive(before.at("a")); });
    wait_until("a is no longer listed", 10s, [&] { return env.server("a").is_null(); });

    const auto after = pids_of(env);
    CHECK(after.at("b") == before.at("b"));
    CHECK(after.at("c") != before.at("c"));
    CHECK_FALSE(process_alive(before.at("c")));
    CHECK(names_of(env) == std::vector<std::string>{"b", "c", "d"});
    CHECK(env.server("c")["last_exit"]["reason"] == "reload");
    wait_until("c's new banner is in its logs", 10s, [&] {
        return env.ctl({"logs", "c"}).out.find("c was changed") != std::string::npos;
    });

    SECTION("a broken registry is refused and changes nothing") {
        env.write_registry(server_toml("b") + "[servers.e]\ncomand = \"mcpd-demo-server\"\n");
        const RunResult broken = env.ctl({"reload"});
        INFO(broken.describe());
        CHECK(broken.exit_code == 1);
        const std::string where = env.registry() + ":";
        const auto at = broken.err.find(where);
        REQUIRE(at != std::string::npos);
        // file:line:column: message
        const std::string line = broken.err.substr(at, broken.err.find('\n', at) - at);
        unsigned line_no = 0, column = 0;
        CHECK(std::sscanf(line.c_str() + where.size(), "%u:%u:", &line_no, &column) == 2);
        CHECK(line_no > 0);
        CHECK(column > 0);
        CHECK(broken.err.find("did you mean 'command'") != std::string::npos);
        CHECK(broken.err.find("comand") != std::string::npos);
        CHECK(pids_of(env) == after);
        CHECK(names_of(env) == std::vector<std::string>{"b", "c", "d"});
        CHECK(daemon.log().find("reload applied") == daemon.log().rfind("reload applied"));
    }
    SECTION("SIGHUP reloads too") {
        env.write_registry(server_toml("b") + server_toml("c", {"--stderr-banner=c was changed"}) +
                           server_toml("d") + server_toml("e"));
        daemon.signal(SIGHUP);
        env.wait_state("e", "running");
        CHECK(pids_of(env).at("b") == after.at("b"));
        CHECK(pids_of(env).at("c") == after.at("c"));
        CHECK(pids_of(env).at("d") == after.at("d"));

        // A broken registry on SIGHUP is refused the same way, and mcpd keeps running.
        env.write_registry("[servers.b]\ncomand = \"x\"\n");
        daemon.signal(SIGHUP);
        wait_until("mcpd logs that the SIGHUP reload was refused", 10s, [&] {
            return daemon.log().find("reload on SIGHUP refused") != std::string::npos;
        });
        CHECK_FALSE(daemon.poll_exit().has_value());
        CHECK(names_of(env) == std::vector<std::string>{"b", "c", "d", "e"});
    }
}

TEST_CASE("a reload that would remove every server is refused unless asked for", "[reload]") {
    TestEnv env("reload-remove-all");
    env.write_registry(server_toml("a") + server_toml("b"));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("a", "running");
    env.wait_state("b", "running");
    const auto before = pids_of(env);

    // An empty file (an editor or `cp` caught mid-write), one cut at a table boundary, and one
    // naming only other servers: each refused, by mcpctl and by SIGHUP, and nothing stops.
    for (const std::string& text :
         {std::string(), std::string("[daemon]\nlog_level = \"info\"\n"), server_toml("other")}) {
        env.write_registry(text);
        const RunResult refused = env.ctl({"reload"});
        INFO(refused.describe());
        CHECK(refused.exit_code == 1);
        CHECK(refused.err.find("would stop every server and end every session; nothing was changed") !=
              std::string::npos);
        CHECK(refused.err.find("mcpctl reload --allow-remove-all") != std::string::npos);
        daemon.signal(SIGHUP);
        wait_until("the SIGHUP reload is refused", 10s, [&] {
            return count_of(daemon.log(), "reload on SIGHUP refused") >= 1;
        });
        CHECK(pids_of(env) == before);
        CHECK(env.server("other").is_null());
    }

    // Asked for: applied.
    env.write_registry(std::string());
    const RunResult applied = env.ctl({"reload", "--allow-remove-all"});
    INFO(applied.describe());
    CHECK(applied.exit_code == 0);
    CHECK(applied.out.find("removed: a, b\n") != std::string::npos);
    wait_until("every server is gone", 20s, [&] { return env.status_json()["servers"].empty(); });
}
