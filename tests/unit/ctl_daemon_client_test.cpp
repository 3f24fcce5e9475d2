// mcpctl against a socket: nothing listening, and a scripted fake daemon on a private socket.
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/control_protocol.h"
#include "common/unique_fd.h"
#include "ctl/command.h"
#include "run_mcpctl.h"
#include "temp_dir.h"

using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// A Unix socket bound to `path`, listening when asked.
mcpd::UniqueFd bound_socket(const std::string& path, bool listening) {
    mcpd::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(fd);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    path.copy(addr.sun_path, sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    if (listening) REQUIRE(::listen(fd.get(), 4) == 0);
    return fd;
}

// Accepts one connection, reads one request line, writes `script` verbatim, keeps the
// connection open for `hold`, then closes it.
class StubDaemon {
public:
    StubDaemon(std::string path, std::string script, std::chrono::milliseconds hold = 0ms)
        : path_(std::move(path)), listener_(bound_socket(path_, true)) {
        thread_ = std::thread([this, script = std::move(script), hold] { serve(script, hold); });
    }
    ~StubDaemon() {
        if (thread_.joinable()) thread_.join();
    }

    const std::string& path() const { return path_; }
    // The request line mcpctl sent; valid after the command returned.
    json request() {
        if (thread_.joinable()) thread_.join();
        return json::parse(request_);
    }

private:
    void serve(const std::string& script, std::chrono::milliseconds hold) {
        pollfd pfd{listener_.get(), POLLIN, 0};
        if (::poll(&pfd, 1, 5000) != 1) return;
        const mcpd::UniqueFd conn(::accept(listener_.get(), nullptr, nullptr));
        char c;
        while (::read(conn.get(), &c, 1) == 1 && c != '\n') request_ += c;
        std::size_t done = 0;
        while (done < script.size()) {
            const ssize_t n =
                ::send(conn.get(), script.data() + done, script.size() - done, MSG_NOSIGNAL);
            if (n <= 0) return;
            done += static_cast<std::size_t>(n);
        }
        std::this_thread::sleep_for(hold);
    }

    std::string path_;
    mcpd::UniqueFd listener_;
    std::string request_;
    std::thread thread_;
};


const std::string kNotRunningTail =
    "). Start it with 'mcpd --config FILE' or 'systemctl --user start mcpd'.\n";

}  // namespace

TEST_CASE("no socket file: exit 3 and the not-running sentence", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    const std::string socket = dir.path("mcpd.sock");
    const Ran ran = run({"--socket", socket, "status"});
    CHECK(ran.exit_code == 3);
    CHECK(ran.out.empty());
    CHECK(ran.err == "mcpctl: mcpd is not running (nothing listens on " + socket + kNotRunningTail);
}

TEST_CASE("a stale socket nobody listens on: exit 3 as well", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    const std::string socket = dir.path("stale.sock");
    const auto bound = bound_socket(socket, false);  // bound, never listening: ECONNREFUSED
    const Ran ran = run({"start", "demo", "--socket", socket});
    CHECK(ran.exit_code == 3);
    CHECK(ran.err == "mcpctl: mcpd is not running (nothing listens on " + socket + kNotRunningTail);
}

TEST_CASE("mcpctl --json reports a daemon that is not running as an error object", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    const Ran ran = run({"--json", "--socket", dir.path("none.sock"), "status"});
    CHECK(ran.exit_code == 3);
    const json printed = json::parse(ran.out);
    CHECK(printed["error"]["code"] == "not_running");
}

TEST_CASE("a socket path too long for sun_path is an error, not 'not running'", "[ctl][client]") {
    const Ran ran = run({"--socket", "/tmp/" + std::string(200, 'x'), "status"});
    CHECK(ran.exit_code == 1);
    CHECK(ran.err.find("too long") != std::string::npos);
}

TEST_CASE("mcpctl --version prints the client version even without a daemon", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    const Ran ran = run({"--socket", dir.path("none.sock"), "--version"});
    CHECK(ran.exit_code == 0);
    CHECK(ran.out == "mcpctl " MCPD_VERSION " (protocol 1)\n");
}

TEST_CASE("usage errors exit 2 and print the usage line", "[ctl][client]") {
    Ran ran = run({"logs"});
    CHECK(ran.exit_code == 2);
    CHECK(ran.err ==
          "mcpctl: 'logs' needs a server NAME\n"
          "usage: mcpctl logs [-f|--follow] [-n N|--lines N] NAME\n");
    ran = run({"s"});
    CHECK(ran.exit_code == 2);
    CHECK(ran.err.starts_with("mcpctl: ambiguous command 's', could be: "));
    CHECK(run({}).exit_code == 2);
    CHECK(run({"help", "nope"}).exit_code == 2);
    CHECK(run({"status", "--help"}).exit_code == 0);
}

TEST_CASE("status against a fake daemon: request, table, exit 0", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"),
                      R"({"ok": true, "result": {"servers": [{"name": "demo", "state": "failed",)"
                      R"( "pid": null, "restarts": 0, "sessions": 0, "last_exit": null,)"
                      R"( "error": "command 'x' not found"}]}})"
                      "\n");
    const Ran ran = run({"statu", "demo", "--socket", daemon.path()});  // a prefix
    CHECK(ran.exit_code == 0);
    CHECK(ran.out.starts_with("NAME  STATE   PID"));
    CHECK(ran.out.ends_with("\ndemo: command 'x' not found\n"));
    const json request = daemon.request();
    CHECK(request["protocol"] == mcpd::control::kProtocolVersion);
    CHECK(request["command"] == "status");
    CHECK(request["servers"] == json::array({"demo"}));
}

TEST_CASE("mcpctl --json prints the daemon's result as it is", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"), R"({"ok": true, "result": {"servers": []}})"
                                          "\n");
    const Ran ran = run({"--json", "status", "--socket", daemon.path()});
    CHECK(ran.exit_code == 0);
    CHECK(json::parse(ran.out) == json{{"servers", json::array()}});
}

TEST_CASE("a daemon that closes the connection mid-reply: exit 1, clear message", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"), R"({"ok": tr)");
    const Ran ran = run({"--socket", daemon.path(), "status"});
    CHECK(ran.exit_code == 1);
    CHECK(ran.err ==
          "mcpctl: mcpd closed the connection in the middle of a reply (" + daemon.path() + ")\n");
}

TEST_CASE("a daemon that closes the connection without answering: exit 1", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"), "");
    const Ran ran = run({"--socket", daemon.path(), "reload"});
    CHECK(ran.exit_code == 1);
    CHECK(ran.err.find("closed the connection without answering") != std::string::npos);
}

TEST_CASE("an error reply prints its message and details on stderr, exit 1", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"),
                      R"({"ok": false, "error": {"code": "config", "message": "r.toml has errors",)"
                      R"( "details": ["r.toml:3:1: unknown key 'comand'"]}})"
                      "\n");
    const Ran ran = run({"reload", "--socket", daemon.path()});
    CHECK(ran.exit_code == 1);
    CHECK(ran.out.empty());
    CHECK(ran.err == "mcpctl: r.toml has errors\nr.toml:3:1: unknown key 'comand'\n");
}

TEST_CASE("a protocol error is printed as the daemon wrote it", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(
        dir.path("d.sock"),
        R"({"ok": false, "error": {"code": "protocol", "message": "protocol 1 is not 2"}})"
        "\n");
    const Ran ran = run({"--socket", daemon.path(), "version"});
    CHECK(ran.exit_code == 1);
    CHECK(ran.out == "mcpctl " MCPD_VERSION " (protocol 1)\n");
    CHECK(ran.err == "mcpctl: protocol 1 is not 2\n");
}

TEST_CASE("start --wait: a failed server prints its error and exits 1", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"),
                      R"({"ok": true, "result": {"servers": [{"name": "demo", "state": "failed",)"
                      R"( "pid": null, "error": "command 'x' not found"}]}})"
                      "\n");
    const Ran ran = run({"--socket", daemon.path(), "start", "demo", "--wait", "--timeout", "2s"});
    CHECK(ran.exit_code == 1);
    CHECK(ran.out == "demo: failed\n");
    CHECK(ran.err == "mcpctl: demo: command 'x' not found\n");
    const json request = daemon.request();
    CHECK(request["wait"] == true);
    CHECK(request["timeout_ms"] == 2000);
}

TEST_CASE("stop: a server left failed is no error", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(
        dir.path("d.sock"),
        R"({"ok": true, "result": {"servers": [{"name": "demo", "state": "failed"}]}})"
        "\n");
    CHECK(run({"--socket", daemon.path(), "stop", "demo"}).exit_code == 0);
}

TEST_CASE("logs --follow prints the backlog, then log messages until the close", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"), R"({"ok": true, "result": {"lines": ["old 1", "old 2"]}})"
                                          "\n"
                                          R"({"log": "new 1"})"
                                          "\n"
                                          R"({"log": "new 2"})"
                                          "\n");
    const Ran ran = run({"--socket", daemon.path(), "logs", "-f", "-n", "2", "demo"});
    CHECK(ran.exit_code == 0);
    CHECK(ran.out == "old 1\nold 2\nnew 1\nnew 2\n");
    const json request = daemon.request();
    CHECK(request["server"] == "demo");
    CHECK(request["lines"] == 2);
    CHECK(request["follow"] == true);
}

TEST_CASE("logs --follow: a close in the middle of a line is an error", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"), R"({"ok": true, "result": {"lines": []}})"
                                          "\n"
                                          R"({"log": "cut)");
    const Ran ran = run({"--socket", daemon.path(), "logs", "--follow", "demo"});
    CHECK(ran.exit_code == 1);
    CHECK(ran.err.find("in the middle of a reply") != std::string::npos);
}

TEST_CASE("shutdown --wait returns once mcpd lets go of the connection", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"),
                      R"({"ok": true, "result": {}})"
                      "\n",
                      200ms);
    const Ran ran = run({"--socket", daemon.path(), "shutdown", "--wait"});
    CHECK(ran.exit_code == 0);
    CHECK(ran.out == "mcpd has stopped\n");
}

TEST_CASE("shutdown --wait gives up after --timeout", "[ctl][client]") {
    const TempDir dir("mcpctl-test");
    StubDaemon daemon(dir.path("d.sock"),
                      R"({"ok": true, "result": {}})"
                      "\n",
                      800ms);
    const auto started = std::chrono::steady_clock::now();
    const Ran ran = run({"--socket", daemon.path(), "shutdown", "--wait", "--timeout", "200ms"});
    CHECK(std::chrono::steady_clock::now() - started < 700ms);
    CHECK(ran.exit_code == 1);
    CHECK(ran.err.find("still shutting down after 200ms") != std::string::npos);
}
