// mcpctl against a live mcpd: start/stop/restart, status, unknown names, no daemon, and
// control lines no mcpctl would send.
#include <catch2/catch.hpp>
#include <fstream>

#include "harness.h"
#include "raw_client.h"

using namespace integration;
using nlohmann::json;

namespace {

// The STATUS object of `name` in a start/stop/restart --json result.
json action_entry(const RunResult& result, const std::string& name) {
    const json parsed = json::parse(result.out, nullptr, false);
    if (parsed.is_object() && parsed.contains("servers")) {
        for (const json& entry : parsed["servers"])
            if (entry.value("name", "") == name) return entry;
    }
    return nullptr;
}

// Send one raw line on a fresh connection and return the parsed reply.
json raw_request(const std::string& socket, const std::string& line) {
    RawClient client(socket);
    REQUIRE(client.send(line) == line.size());
    const auto reply = client.read_line();
    INFO("request: " << line.substr(0, 200));
    REQUIRE(reply.has_value());
    const json parsed = json::parse(*reply, nullptr, false);
    REQUIRE(parsed.is_object());
    return parsed;
}

}  // namespace

TEST_CASE("mcpctl starts, stops and restarts a server", "[control]") {
    TestEnv env("ctl-actions");
    env.write_registry(server_toml("demo") + server_toml("idle", {}, {{"autostart", "false"}}));
    env.start_daemon();
    env.wait_state("demo", "running");

    json idle = env.server("idle");
    CHECK(idle["state"] == "stopped");
    CHECK(idle["wanted"] == "down");
    CHECK(idle["pid"].is_null());
    CHECK(idle["last_exit"].is_null());

    auto started_at = Clock::now();
    RunResult start = env.ctl({"--json", "start", "--wait", "idle"});
    REQUIRE(start.exit_code == 0);
    WARN("start --wait took " << ms_since(started_at) << " ms");
    json entry = action_entry(start, "idle");
    INFO("start result: " << start.out);
    REQUIRE(entry["state"] == "running");
    REQUIRE(entry["pid"].is_number_integer());
    const pid_t first_pid = entry["pid"].get<pid_t>();
    CHECK(process_alive(first_pid));
    CHECK(env.server_pid("idle") == first_pid);

    started_at = Clock::now();
    RunResult restart = env.ctl({"restart", "--wait", "idle"});
    REQUIRE(restart.exit_code == 0);
    WARN("restart --wait took " << ms_since(started_at) << " ms");
    CHECK(restart.out.find("idle: running (pid ") != std::string::npos);
    const auto second_pid = env.server_pid("idle");
    REQUIRE(second_pid.has_value());
    CHECK(*second_pid != first_pid);
    wait_until("the first idle process is gone", 5s, [&] { return !process_alive(first_pid); });
    idle = env.server("idle");
    CHECK(idle["state"] == "running");
    CHECK(idle["last_exit"]["reason"] == "restart");

    started_at = Clock::now();
    RunResult stop = env.ctl({"stop", "--wait", "idle"});
    REQUIRE(stop.exit_code == 0);
    WARN("stop --wait took " << ms_since(started_at) << " ms");
    CHECK(stop.out.find("idle: stopped") != std::string::npos);
    idle = env.server("idle");
    CHECK(idle["state"] == "stopped");
    CHECK(idle["wanted"] == "down");
    CHECK(idle["pid"].is_null());
    CHECK(idle["last_exit"]["reason"] == "stopped");
    CHECK_FALSE(process_alive(*second_pid));

    // Without --wait the reply comes at once, with the request already applied.
    RunResult quick = env.ctl({"--json", "start", "idle"});
    REQUIRE(quick.exit_code == 0);
    entry = action_entry(quick, "idle");
    INFO("start result: " << quick.out);
    CHECK(entry["wanted"] == "up");
    CHECK((entry["state"] == "starting" || entry["state"] == "running"));
    env.wait_state("idle", "running");

    // Usage errors exit 2.
    CHECK(env.ctl({"start"}).exit_code == 2);
    CHECK(env.ctl({"stop", "--timeout", "1s", "idle"}).exit_code == 2);
}

TEST_CASE("status prints a table and --json the documented shape", "[control]") {
    TestEnv env("ctl-status");
    env.write_registry(server_toml("demo") +
                       server_toml("broken", {}, {}, "mcpd-no-such-command-anywhere"));
    DaemonProcess& daemon = env.start_daemon();
    env.wait_state("demo", "running");
    env.wait_state("broken", "failed");
    const pid_t demo_pid = *env.server_pid("demo");

    const RunResult table = env.ctl({"status"});
    REQUIRE(table.exit_code == 0);
    INFO("status output:\n" << table.out);
    const std::string header = table.out.substr(0, table.out.find('\n'));
    for (const char* column :
         {"NAME", "STATE", "PID", "UPTIME", "RESTARTS", "LAST EXIT", "SESSIONS"})
        CHECK(header.find(column) != std::string::npos);
    const auto demo_row = table.out.find("\ndemo ");
    REQUIRE(demo_row != std::string::npos);
    const std::string row =
        table.out.substr(demo_row + 1, table.out.find('\n', demo_row + 1) - demo_row - 1);
    CHECK(row.find("running") != std::string::npos);
    CHECK(row.find(std::to_string(demo_pid)) != std::string::npos);
    // A failed server's error sentence comes below the table.
    CHECK(table.out.find("\nbroken: ") != std::string::npos);
    CHECK(table.out.find("No such file or directory") != std::string::npos);

    const json status = env.status_json();
    INFO("status --json: " << status.dump());
    const json& d = status["daemon"];
    CHECK(d["pid"] == daemon.pid());
    CHECK(d["version"].is_string());
    CHECK(d["uptime_ms"].is_number_integer());
    CHECK(d["config"] == env.registry());
    CHECK(d["socket"] == env.socket());
    CHECK(d["servers"] == 2);
    CHECK(d["running"] == 1);
    REQUIRE(status["servers"].is_array());
    REQUIRE(status["servers"].size() == 2);
    CHECK(status["servers"][0]["name"] == "demo");  // in registry order
    CHECK(status["servers"][1]["name"] == "broken");
    for (const json& s : status["servers"]) {
        for (const char* key : {"name", "state", "wanted", "pid", "state_ms", "uptime_ms",
                                "restarts", "sessions", "last_exit", "error", "next_start_ms"})
            CHECK(s.contains(key));
        CHECK(s["state_ms"].is_number_integer());
        CHECK(s["restarts"].is_number_integer());
        CHECK(s["sessions"].is_number_integer());
    }
    const json& demo = status["servers"][0];
    CHECK(demo["state"] == "running");
    CHECK(demo["wanted"] == "up");
    CHECK(demo["pid"] == demo_pid);
    CHECK(demo["uptime_ms"].is_number_integer());
    CHECK(demo["error"].is_null());
    CHECK(demo["next_start_ms"].is_null());

    const RunResult one = env.ctl({"--json", "status", "demo"});
    REQUIRE(one.exit_code == 0);
    const json filtered = json::parse(one.out);
    REQUIRE(filtered["servers"].size() == 1);
    CHECK(filtered["servers"][0]["name"] == "demo");
}

TEST_CASE("an unknown server name is refused with the known names", "[control]") {
    TestEnv env("ctl-unknown");
    env.write_registry(server_toml("alpha") + server_toml("beta", {}, {{"autostart", "false"}}));
    env.start_daemon();
    for (const std::vector<std::string>& args : {std::vector<std::string>{"start", "nosuch"},
                                                 {"stop", "nosuch"},
                                                 {"restart", "nosuch"},
                                                 {"status", "nosuch"},
                                                 {"logs", "nosuch"},
                                                 {"start", "alpha", "nosuch"}}) {
        const RunResult result = env.ctl(args);
        INFO("mcpctl " << args[0] << ": " << result.describe());
        CHECK(result.exit_code == 1);
        CHECK(result.err.find("nosuch") != std::string::npos);
        CHECK(result.err.find("alpha") != std::string::npos);
        CHECK(result.err.find("beta") != std::string::npos);
    }
    // Nothing was applied: a request naming an unknown server is refused as a whole.
    CHECK(env.state("beta") == "stopped");
}

TEST_CASE("mcpctl exits 3 when no daemon listens", "[control]") {
    TestEnv env("ctl-none");
    const RunResult human = env.ctl({"status"});
    INFO(human.describe());
    CHECK(human.exit_code == 3);
    CHECK(human.err.find("mcpd is not running") != std::string::npos);
    CHECK(human.err.find(env.socket()) != std::string::npos);

    const RunResult machine = env.ctl({"--json", "start", "demo"});
    INFO(machine.describe());
    CHECK(machine.exit_code == 3);
    const json parsed = json::parse(machine.out, nullptr, false);
    REQUIRE(parsed.is_object());
    CHECK(parsed["error"]["code"] == "not_running");
}

TEST_CASE("malformed control requests get error replies and never crash mcpd", "[control]") {
    TestEnv env("ctl-malformed");
    env.write_registry(server_toml("demo"));
    DaemonProcess& daemon = env.start_daemon();

    SECTION("several bad lines on one connection") {
        RawClient client(env.socket());
        const std::string good = R"({"protocol":1,"command":"version"})"
                                 "\n";
        const std::vector<std::pair<std::string, std::string>> cases = {
            {"this is not json\n", "bad_request"},
            {"[1,2,3]\n", "bad_request"},
            {R"({"protocol":1})"
             "\n",
             "bad_request"},
            {R"({"protocol":1,"command":"frobnicate"})"
             "\n",
             "unknown_command"},
            {R"({"protocol":1,"command":"start","servers":"demo"})"
             "\n",
             "bad_request"},
            {R"({"protocol":1,"command":"start","servers":[42]})"
             "\n",
             "bad_request"},
            {R"({"protocol":1,"command":"logs"})"
             "\n",
             "bad_request"},
        };
        for (const auto& [line, code] : cases) {
            INFO("request: " << line);
            REQUIRE(client.send(line) == line.size());
            const auto reply = client.read_line();
            REQUIRE(reply.has_value());
            const json parsed = json::parse(*reply, nullptr, false);
            INFO("reply: " << *reply);
            REQUIRE(parsed.is_object());
            CHECK(parsed["ok"] == false);
            CHECK(parsed["error"]["code"] == code);
            CHECK(parsed["error"]["message"].is_string());
        }
        // The connection still works after those errors.
        REQUIRE(client.send(good) == good.size());
        const json version = json::parse(client.read_line().value_or("{}"));
        CHECK(version["ok"] == true);
        CHECK(version["result"]["pid"] == daemon.pid());
    }

    SECTION("a wrong protocol version is named and the connection closed") {
        RawClient client(env.socket());
        const std::string line = R"({"protocol":99,"command":"version"})"
                                 "\n";
        REQUIRE(client.send(line) == line.size());
        const auto reply = client.read_line();
        REQUIRE(reply.has_value());
        const json parsed = json::parse(*reply);
        INFO("reply: " << *reply);
        CHECK(parsed["ok"] == false);
        CHECK(parsed["error"]["code"] == "protocol");
        const std::string message = parsed["error"]["message"];
        CHECK(message.find("99") != std::string::npos);
        CHECK(message.find('1') != std::string::npos);
        CHECK(client.wait_closed());
        // A request without any version is refused the same way.
        const json none = raw_request(env.socket(), R"({"command":"version"})"
                                                    "\n");
        CHECK(none["error"]["code"] == "protocol");
    }

    SECTION("a 2 MiB line is refused") {
        RawClient client(env.socket());
        const std::string huge = R"({"protocol":1,"command":"version","pad":")" +
                                 std::string(2 * 1024 * 1024, 'x') + "\"}\n";
        const std::size_t sent = client.send(huge);
        WARN("mcpd read " << sent << " of " << huge.size() << " bytes before answering");
        const auto reply = client.read_line();
        REQUIRE(reply.has_value());
        const json parsed = json::parse(*reply);
        INFO("reply: " << *reply);
        CHECK(parsed["ok"] == false);
        CHECK(parsed["error"]["code"] == "bad_request");
        CHECK(client.wait_closed());
    }

    SECTION("a connection that hangs up halfway through a line") {
        {
            RawClient client(env.socket());
            client.send(R"({"protocol":1,"comm)");
        }
        RawClient idle(env.socket());  // and one that never sends anything
    }

    // Whatever happened above, mcpd is alive and answering.
    const RunResult version = env.ctl({"--json", "version"});
    INFO(version.describe());
    REQUIRE(version.exit_code == 0);
    CHECK_FALSE(daemon.poll_exit().has_value());
    CHECK(env.state("demo") != "(not listed)");
}

TEST_CASE("mcpd --check-config reports a good registry and every error of a bad one", "[control]") {
    TestEnv env("check-config");
    env.write_registry(server_toml("first") + server_toml("second", {"--tick-ms=0"}));
    const RunResult good = run_process({bin("mcpd"), "--check-config", env.registry()});
    INFO(good.describe());
    CHECK(good.exit_code == 0);
    CHECK(good.out.find("OK, 2 servers") != std::string::npos);
    CHECK(good.out.find("first") != std::string::npos);
    CHECK(good.out.find("second") != std::string::npos);

    const std::string bad_path = env.path("bad.toml");
    {
        std::ofstream out(bad_path);
        out << "[servers.a]\n"                     // 1
               "comand = \"mcpd-demo-server\"\n"   // 2
               "restart = \"sometimes\"\n"         // 3
               "\n"                                // 4
               "[servers.b]\n"                     // 5
               "command = \"mcpd-demo-server\"\n"  // 6
               "stop_grace = \"fast\"\n";          // 7
    }
    const RunResult bad = run_process({bin("mcpd"), "--check-config", bad_path});
    INFO(bad.describe());
    CHECK(bad.exit_code == 1);
    const auto has_error = [&](int line, const std::string& text) {
        const std::string prefix = bad_path + ":" + std::to_string(line) + ":";
        for (std::size_t at = bad.err.find(prefix); at != std::string::npos;
             at = bad.err.find(prefix, at + 1)) {
            const std::string rest =
                bad.err.substr(at + prefix.size(), bad.err.find('\n', at) - at - prefix.size());
            // "COLUMN: message"
            const auto colon = rest.find(':');
            if (colon == std::string::npos || colon == 0) continue;
            if (rest.substr(0, colon).find_first_not_of("0123456789") != std::string::npos)
                continue;
            if (rest.find(text) != std::string::npos) return true;
        }
        return false;
    };
    CHECK(has_error(2, "did you mean 'command'"));
    CHECK(has_error(3, "sometimes"));
    CHECK(has_error(7, "fast"));
    CHECK(bad.err.find("errors") != std::string::npos);
}
