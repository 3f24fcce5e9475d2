// The integration harness: each test gets a private directory, registry, socket and mcpd,
// drives it with the real mcpctl, and always stops and reaps everything it started.
//
// When an assertion fails while a TestEnv is alive, the tail of its daemon log is printed
// (see the listener in harness.cpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

#include "proc_fs.h"
#include "process.h"

namespace integration {

// MCPD_BIN_DIR/name.
std::string bin(const std::string& name);

// One [servers.NAME] table: `command` with `args`, the test's marker in its env (the text
// "@MARKER@", replaced by TestEnv::write_registry), fast stop/restart timings, and `settings`
// (key -> TOML value as written, e.g. {"restart", "\"always\""}) added or overriding them.
std::string server_toml(const std::string& name, const std::vector<std::string>& args = {},
                        const std::map<std::string, std::string>& settings = {},
                        const std::string& command = "mcpd-demo-server");

// A TOML basic string: "text" with quotes and backslashes escaped.
std::string toml_string(const std::string& text);

// Poll `predicate` every 20 ms until it holds; FAIL naming `what` when `timeout` runs out.
void wait_until(const std::string& what, Duration timeout, const std::function<bool()>& predicate,
                std::source_location where = std::source_location::current());

// Like wait_until, but returns false on timeout instead of failing.
bool poll_until(Duration timeout, const std::function<bool()>& predicate);

// Watch the children of `parent` for at least `observe`; FAIL when one stays a zombie for
// longer than `limit`. Returns how many short-lived zombies were seen.
int expect_no_lasting_zombies(pid_t parent, Duration observe = 300ms, Duration limit = 1s,
                              std::source_location where = std::source_location::current());

// How many times `needle` occurs in `text` (overlaps included).
std::size_t count_of(const std::string& text, const std::string& needle);

// Milliseconds since `start`, for printed measurements.
long long ms_since(Clock::time_point start);

class TestEnv {
public:
    explicit TestEnv(const std::string& name);
    ~TestEnv();
    TestEnv(const TestEnv&) = delete;
    TestEnv& operator=(const TestEnv&) = delete;

    const std::string& dir() const { return dir_; }
    std::string path(const std::string& file) const { return dir_ + "/" + file; }
    const std::string& socket() const { return socket_; }
    const std::string& registry() const { return registry_; }
    // Unique to this test: set as MCPD_TEST_MARKER in every server's env.
    const std::string& marker() const { return marker_; }

    // Write the registry file, "@MARKER@" replaced by marker().
    void write_registry(const std::string& text) const;

    // Start later daemons with RLIMIT_NOFILE lowered to `limit` (as `ulimit -n` would).
    void limit_daemon_fds(unsigned long limit) { fd_limit_ = limit; }
    // Start mcpd on registry() and socket(), and wait until `mcpctl version` answers.
    DaemonProcess& start_daemon(Duration timeout = 20s);
    DaemonProcess& daemon();
    bool has_daemon() const { return daemon_ != nullptr; }
    pid_t daemon_pid() { return daemon().pid(); }
    // Another mcpd with the same registry and socket, logging to `log_name` in dir(); no wait.
    std::unique_ptr<DaemonProcess> spawn_daemon(const std::string& log_name);
    // Forget the main daemon after the test has reaped it itself (kill -9, shutdown).
    void drop_daemon();

    // mcpctl --socket socket() ARGS...
    RunResult ctl(const std::vector<std::string>& args, Duration timeout = 60s) const;
    // `mcpctl --json status`, parsed; FAILs when mcpctl does not succeed.
    nlohmann::json status_json() const;
    // The STATUS object of `name`, null when the daemon does not list it.
    nlohmann::json server(const std::string& name) const;
    std::string state(const std::string& name) const;
    // The server's pid, nullopt when it has none.
    std::optional<pid_t> server_pid(const std::string& name) const;
    // Wait until `name` is in `state`.
    void wait_state(const std::string& name, const std::string& state, Duration timeout = 20s,
                    std::source_location where = std::source_location::current()) const;

    // The live processes carrying this test's marker.
    std::vector<pid_t> marked_processes() const { return processes_with_marker(marker_); }

    // What every mcpd of this test adds to its environment: a state and a cache directory of
    // its own (STATE_DIRECTORY, where lazy servers keep their lists; CACHE_DIRECTORY, where
    // boxed servers' {cache} is), under dir().
    std::vector<std::string> daemon_environment() const;
    // The daemon log (every mcpd this test started), for messages.
    std::string daemon_log() const;
    // Print the log tail once; called by the failure listener.
    void report_failure();

private:
    std::string dir_;
    std::string socket_;
    std::string registry_;
    std::string marker_;
    std::unique_ptr<DaemonProcess> daemon_;
    std::vector<std::string> log_files_;
    std::optional<unsigned long> fd_limit_;
    bool reported_ = false;
};

}  // namespace integration
