// mcpctl stats and mcpctl top against a real mcpd with two servers that had a few calls: the
// figures as JSON and as a table, top in a real terminal (a pane of a private tmux server),
// and top into a pipe.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "mcp_session.h"
#include "text_lines.h"

using namespace integration;
using nlohmann::json;

namespace {

std::string two_servers() {
    return server_toml("alpha") + "\n" + server_toml("beta") + "\n";
}

// A session on each server, which lists its tools: three echo calls on alpha, one add on beta.
struct AlphaBetaTraffic {
    McpSession alpha;
    McpSession beta;

    explicit AlphaBetaTraffic(const TestEnv& env)
        : alpha(env.socket(), "alpha"), beta(env.socket(), "beta") {
        alpha.initialize("top-test");
        beta.initialize("top-test");
        // A tool is counted by name once its server listed it, as agents have it list them.
        for (McpSession* s : {&alpha, &beta}) s->wait_response(s->request("tools/list"));
        for (const char* text : {"one", "two", "three"})
            REQUIRE(alpha.wait_response(alpha.call_tool("echo", {{"text", text}})).tool_text() ==
                    text);
        REQUIRE(beta.wait_response(beta.call_tool("add", {{"a", 2}, {"b", 3}})).tool_text() == "5");
    }
};

// The server named `name` in a stats result, null when it is not there.
json server_or_null(const json& result, const std::string& name) {
    for (const json& server : result.value("servers", json::array()))
        if (server.value("name", "") == name) return server;
    return nullptr;
}

// The entry of `tool` in a server's "tools", null when it is not there.
json tool_or_null(const json& server, const std::string& tool) {
    for (const json& entry : server.value("tools", json::array()))
        if (entry.value("tool", json()) == tool) return entry;
    return nullptr;
}

// `text` quoted for sh.
std::string sh_quote(const std::string& text) {
    std::string quoted = "'";
    for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// The first `name` in $PATH that is executable; empty when there is none.
std::string find_program(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return {};
}

// One 80x24 pane running `command` and then `echo "top exited $?"` and a sleep, so the pane
// outlives it and the shell reports its exit status. The tmux server is the test's own (its
// own -L socket name, no configuration file) and is killed, with everything in it, on
// destruction, its socket removed.
class TmuxPane {
public:
    explicit TmuxPane(const std::string& command)
        : tmux_(find_program("tmux")),
          name_("mcpd-top-test-" + std::to_string(::getpid()) + "-" + std::to_string(++count_)) {
        if (tmux_.empty()) FAIL("tmux is not installed (./dev installs it)");
        const RunResult started = run({"new-session", "-d", "-x", "80", "-y", "24", "-s", "top",
                                       command + "; echo \"top exited $?\"; sleep 600"});
        socket_path_ = format("#{socket_path}");
        if (started.exit_code != 0 || socket_path_.empty()) {
            stop();
            FAIL("tmux new-session failed: " << started.describe());
        }
    }
    ~TmuxPane() { stop(); }
    TmuxPane(const TmuxPane&) = delete;
    TmuxPane& operator=(const TmuxPane&) = delete;

    RunResult run(const std::vector<std::string>& args) const {
        std::vector<std::string> argv{tmux_, "-L", name_, "-f", "/dev/null"};
        argv.insert(argv.end(), args.begin(), args.end());
        return run_process(argv, 10s);
    }
    // What the pane shows now, one line per row, trailing spaces trimmed.
    std::string capture() const { return run({"capture-pane", "-p", "-t", "top"}).out; }
    // A format of the pane, such as "#{alternate_on}".
    std::string format(const std::string& text) const {
        std::string out = run({"display-message", "-p", "-t", "top", text}).out;
        while (!out.empty() && out.back() == '\n') out.pop_back();
        return out;
    }
    void send_keys(const std::string& keys) const {
        REQUIRE(run({"send-keys", "-t", "top", keys}).exit_code == 0);
    }
    // Wait until the pane shows `needle`; returns the last capture either way.
    std::string wait_for(const std::string& needle, Duration timeout = 15s) const {
        std::string screen;
        poll_until(timeout, [&] {
            screen = capture();
            return screen.find(needle) != std::string::npos;
        });
        return screen;
    }
    // The mcpctl the pane's shell runs, 0 once it is gone.
    pid_t mcpctl_pid() const {
        const pid_t shell = std::stoi(format("#{pane_pid}"));
        for (const pid_t child : children_of(shell))
            if (process_name(child) == "mcpctl") return child;
        return 0;
    }

private:
    // Kill the server; tmux leaves its socket behind.
    void stop() const {
        run({"kill-server"});
        if (!socket_path_.empty()) ::unlink(socket_path_.c_str());
    }

    static inline std::atomic<int> count_{0};
    std::string tmux_;
    std::string name_;
    std::string socket_path_;
};

std::string top_command(const TestEnv& env) {
    return sh_quote(bin("mcpctl")) + " --socket " + sh_quote(env.socket()) + " top";
}

// Wait for top's table with both servers in the pane; checks every line fits the width.
std::string wait_for_table(const TmuxPane& pane) {
    std::string screen;
    const bool shown = poll_until(20s, [&] {
        screen = pane.capture();
        return screen.find("alpha") != std::string::npos &&
               screen.find("beta") != std::string::npos;
    });
    INFO(screen);
    REQUIRE(shown);
    for (const std::string& line : lines_of(screen)) CHECK(line.size() <= 80);
    return screen;
}

}  // namespace

TEST_CASE("stats --json has both servers with the calls they were asked", "[top]") {
    TestEnv env("stats-json");
    env.write_registry(two_servers());
    env.start_daemon();
    const AlphaBetaTraffic traffic(env);

    const RunResult ran = env.ctl({"--json", "stats", "--tools", "--sessions"});
    INFO(ran.describe());
    REQUIRE(ran.exit_code == 0);
    const json result = json::parse(ran.out);
    CHECK(result["uptime_ms"].is_number());
    const json alpha = server_or_null(result, "alpha");
    const json beta = server_or_null(result, "beta");
    REQUIRE(alpha.is_object());
    REQUIRE(beta.is_object());
    CHECK(alpha["state"] == "running");
    CHECK(alpha["sessions"] == 1);
    CHECK(alpha["totals"]["requests"].get<int>() >= 3);
    CHECK(alpha["totals"]["in_flight"] == 0);
    CHECK(alpha["calls_per_s_10s"].get<double>() > 0);
    CHECK(alpha["rss_bytes"].get<double>() > 0);
    const json echo = tool_or_null(alpha, "echo");
    REQUIRE(echo.is_object());
    CHECK(echo["method"] == "tools/call");
    CHECK(echo["requests"] == 3);
    CHECK(echo["replies"] == 3);
    CHECK(echo["latency"]["count"] == 3);
    CHECK(echo["latency"]["buckets"].size() == 20);
    CHECK(tool_or_null(beta, "add")["requests"] == 1);
    REQUIRE(alpha["sessions_detail"].size() == 1);
    CHECK(alpha["sessions_detail"][0]["client"]["name"] == "top-test");
    CHECK(alpha["sessions_detail"][0]["requests"].get<int>() >= 3);

    // Only the servers asked for.
    const RunResult one = env.ctl({"--json", "stats", "beta"});
    REQUIRE(one.exit_code == 0);
    CHECK(json::parse(one.out)["servers"].size() == 1);
    CHECK(server_or_null(json::parse(one.out), "beta").is_object());
}

TEST_CASE("stats prints a table with both servers", "[top]") {
    TestEnv env("stats-text");
    env.write_registry(two_servers());
    env.start_daemon();
    const AlphaBetaTraffic traffic(env);

    const RunResult ran = env.ctl({"stats", "--tools"});
    INFO(ran.describe());
    REQUIRE(ran.exit_code == 0);
    CHECK(ran.out.starts_with("SERVER  STATE"));
    const std::vector<std::string> lines = lines_of(ran.out);
    const auto row = [&](const std::string& start) {
        for (const auto& line : lines)
            if (line.starts_with(start)) return line;
        return std::string();
    };
    CHECK(row("alpha ").find("running") != std::string::npos);
    CHECK(row("beta ").find("running") != std::string::npos);
    CHECK(ran.out.find("TOOL/METHOD") != std::string::npos);
    CHECK(ran.out.find("echo") != std::string::npos);
    for (const auto& line : lines) CHECK(line.size() <= 80);
}

TEST_CASE("top in a terminal: the table, keys, q gives the terminal back with status 0", "[top]") {
    TestEnv env("top-tmux");
    env.write_registry(two_servers());
    env.start_daemon();
    const AlphaBetaTraffic traffic(env);

    const TmuxPane pane(top_command(env));
    std::string screen = wait_for_table(pane);
    CHECK(screen.find("mcpd up") != std::string::npos);
    CHECK(screen.find("sort: calls") != std::string::npos);
    CHECK(screen.find("CALL/S*") != std::string::npos);
    // The alternate screen, the cursor hidden.
    CHECK(pane.format("#{alternate_on} #{cursor_flag}") == "1 0");

    pane.send_keys("s");  // calls -> errors
    screen = pane.wait_for("sort: errors");
    INFO(screen);
    CHECK(screen.find("ERR%*") != std::string::npos);
    pane.send_keys("t");
    screen = pane.wait_for("TOOL/METHOD");
    CHECK(screen.find("echo") != std::string::npos);
    for (const std::string& line : lines_of(screen)) CHECK(line.size() <= 80);

    pane.send_keys("q");
    screen = pane.wait_for("top exited");
    CHECK(screen.find("top exited 0") != std::string::npos);
    CHECK(screen.find("CALL/S") == std::string::npos);  // the table went with the screen
    CHECK(pane.format("#{alternate_on} #{cursor_flag}") == "0 1");
}

TEST_CASE("top in a terminal gives it back when killed, and when mcpd goes away", "[top]") {
    TestEnv env("top-tmux-end");
    env.write_registry(two_servers());
    env.start_daemon();
    std::string screen;

    SECTION("SIGTERM") {
        const TmuxPane pane(top_command(env));
        wait_for_table(pane);
        const pid_t top = pane.mcpctl_pid();
        REQUIRE(top > 0);
        REQUIRE(::kill(top, SIGTERM) == 0);
        screen = pane.wait_for("top exited");
        CHECK(screen.find("top exited 143") != std::string::npos);  // died of SIGTERM
        CHECK(pane.format("#{alternate_on} #{cursor_flag}") == "0 1");
    }
    SECTION("mcpd shuts down") {
        const TmuxPane pane(top_command(env));
        wait_for_table(pane);
        env.daemon().terminate();
        env.drop_daemon();
        screen = pane.wait_for("top exited");
        INFO(screen);
        CHECK(screen.find("top exited 3") != std::string::npos);
        CHECK(screen.find("mcpctl: mcpd is not running") != std::string::npos);
        CHECK(pane.format("#{alternate_on} #{cursor_flag}") == "0 1");
    }
}

TEST_CASE("top into a pipe prints one plain screen, with --json a line per refresh", "[top]") {
    TestEnv env("top-pipe");
    env.write_registry(two_servers());
    env.start_daemon();
    const AlphaBetaTraffic traffic(env);

    const RunResult plain = env.ctl({"top", "--iterations", "2", "--interval", "0.2"});
    INFO(plain.describe());
    REQUIRE(plain.exit_code == 0);
    CHECK(plain.out.find('\x1b') == std::string::npos);
    CHECK(count_of(plain.out, "mcpd up") == 1);
    CHECK(plain.out.find("alpha") != std::string::npos);
    CHECK(plain.out.find("beta") != std::string::npos);
    CHECK(plain.took >= 200ms);

    const RunResult lines = env.ctl({"--json", "top", "--iterations", "2", "--interval", "0.2"});
    REQUIRE(lines.exit_code == 0);
    const std::vector<std::string> each = lines_of(lines.out);
    REQUIRE(each.size() == 2);
    for (const std::string& line : each)
        CHECK(server_or_null(json::parse(line), "alpha").is_object());
}
