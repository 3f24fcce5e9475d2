// Rendering daemon results as text: the status table, start/stop lines, reload, version.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "ctl/command.h"
#include "ctl/output.h"
#include "ctl/server_action.h"
#include "render_command.h"

using nlohmann::json;

namespace {

// A status result as CONTROL.md describes it: one running server with a past exit, one failed
// server that never ran, one in backoff.
json sample_status() {
    return json::parse(R"({
      "daemon": {"pid": 1, "version": "0.1.0", "uptime_ms": 1000, "config": "/etc/mcpd/r.toml",
                 "socket": "/run/mcpd/mcpd.sock", "servers": 3, "running": 1},
      "servers": [
        {"name": "github", "state": "running", "wanted": "up", "pid": 4242, "state_ms": 5120,
         "uptime_ms": 303000, "restarts": 1, "sessions": 2,
         "last_exit": {"status": -15, "step": "term", "reason": "stopped", "ago_ms": 120000},
         "error": null, "next_start_ms": null},
        {"name": "demo", "state": "failed", "wanted": "up", "pid": null, "state_ms": 10,
         "uptime_ms": null, "restarts": 0, "sessions": 0, "last_exit": null,
         "error": "command 'x' not found in PATH", "next_start_ms": null},
        {"name": "flaky", "state": "backoff", "wanted": "up", "pid": null, "state_ms": 10,
         "uptime_ms": null, "restarts": 4, "sessions": 0,
         "last_exit": {"status": 0, "step": "exit", "reason": "crashed"},
         "error": null, "next_start_ms": 3000}
      ]})");
}

}  // namespace

TEST_CASE("format_table pads columns to the widest cell, without trailing spaces",
          "[ctl][render]") {
    CHECK(mcpctl::format_table({"A", "BB"}, {{"xyz", "1"}, {"q", ""}}) ==
          "A    BB\n"
          "xyz  1\n"
          "q\n");
}

TEST_CASE("status renders one row per server with the documented columns", "[ctl][render]") {
    CHECK(render("status", sample_status()) ==
          "NAME    STATE                 PID   UPTIME  RESTARTS  LAST EXIT                      "
          "SESSIONS\n"
          "github  running               4242  5m03s   1         -15 (term, stopped) 2m00s ago  2\n"
          "demo    failed                -     -       0         -                              0\n"
          "flaky   backoff (next in 3s)  -     -       4         0 (exit, crashed)              0\n"
          "\n"
          "demo: command 'x' not found in PATH\n");
}

TEST_CASE("status says what a server's sandbox cannot enforce and what the OOM killer ended",
          "[ctl][render][sandbox]") {
    json result = {{"servers", json::array({{{"name", "fs"}, {"state", "running"}}})}};
    result["servers"][0]["oom_kills"] = 2;
    result["servers"][0]["sandbox"] = {
        {"preset", "project"},
        {"enforced", {"paths: Landlock ABI 7, 20 rules"}},
        {"unenforced", {"cpu 50%: a CPU limit needs a delegated cgroup\u001b[2J"}}};
    CHECK(render("status", result) ==
          "NAME  STATE    PID  UPTIME  RESTARTS  LAST EXIT  SESSIONS\n"
          "fs    running  -    -       -         -          -\n"
          "\n"
          "fs: 2 processes ended by the kernel's OOM killer at its memory limit\n"
          "fs: sandbox not enforced: cpu 50%: a CPU limit needs a delegated cgroup\\u001b[2J\n");
    // Nothing to say: no line.
    result["servers"][0]["oom_kills"] = 0;
    result["servers"][0]["sandbox"]["unenforced"] = json::array();
    CHECK(render("status", result) ==
          "NAME  STATE    PID  UPTIME  RESTARTS  LAST EXIT  SESSIONS\n"
          "fs    running  -    -       -         -          -\n");
}

TEST_CASE("status copes with missing fields and shows '-' for them", "[ctl][render]") {
    const json result = {{"servers", json::array({{{"name", "bare"}, {"state", "stopped"}}})}};
    CHECK(render("status", result) ==
          "NAME  STATE    PID  UPTIME  RESTARTS  LAST EXIT  SESSIONS\n"
          "bare  stopped  -    -       -         -          -\n");
}

TEST_CASE("status with no servers says so", "[ctl][render]") {
    CHECK(render("status", {{"servers", json::array()}}) == "no servers to show\n");
}

TEST_CASE("start/stop/restart print one line per server", "[ctl][render]") {
    const json result = json::parse(R"({"servers": [
        {"name": "demo", "state": "running", "pid": 123},
        {"name": "off", "state": "stopped", "pid": null},
        {"name": "later", "state": "backoff", "pid": null, "next_start_ms": 2000},
        {"name": "bad", "state": "failed", "pid": null, "error": "command 'x' not found"}]})");
    CHECK(render("start", result) ==
          "demo: running (pid 123)\n"
          "off: stopped\n"
          "later: backoff (next start in 2s)\n"
          "bad: failed\n");
    CHECK(mcpctl::failed_servers(result) == std::vector<std::string>{"bad: command 'x' not found"});
    CHECK(
        mcpctl::failed_servers(json::parse(R"({"servers": [{"name": "d", "state": "failed"}]})")) ==
        std::vector<std::string>{"d: failed (no reason given)"});
}

TEST_CASE("reload lists each category, '-' when empty", "[ctl][render]") {
    const json result = {{"added", {"a", "b"}},
                         {"removed", json::array()},
                         {"changed", {"c"}},
                         {"unchanged", {"d"}}};
    CHECK(render("reload", result) ==
          "added: a, b\n"
          "removed: -\n"
          "changed: c\n"
          "unchanged: d\n");
}

TEST_CASE("version shows the daemon's version, protocol and pid", "[ctl][render]") {
    CHECK(render("version", {{"version", "0.1.0"}, {"protocol", 1}, {"pid", 99}}) ==
          "mcpd 0.1.0 (protocol 1, pid 99)\n");
}

TEST_CASE("logs prints the lines as they are", "[ctl][render]") {
    CHECK(render("logs", {{"lines", {"one", "two"}}}) == "one\ntwo\n");
}

TEST_CASE("a daemon error prints its message and each detail line", "[ctl][render]") {
    const json error = {
        {"code", "config"},
        {"message", "registry.toml has 2 errors; keeping the old one"},
        {"details", {"r.toml:3:1: unknown key 'comand'", "r.toml:7:12: bad duration"}}};
    std::ostringstream out, err;
    mcpctl::Output human(out, err, false);
    human.daemon_error(error);
    CHECK(out.str().empty());
    CHECK(err.str() ==
          "mcpctl: registry.toml has 2 errors; keeping the old one\n"
          "r.toml:3:1: unknown key 'comand'\n"
          "r.toml:7:12: bad duration\n");

    std::ostringstream jout, jerr;
    mcpctl::Output machine(jout, jerr, true);
    machine.daemon_error(error);
    CHECK(json::parse(jout.str()) == json{{"error", error}});
    CHECK(jerr.str().empty());
}
