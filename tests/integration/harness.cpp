#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include "harness.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

namespace integration {

namespace {

constexpr Duration kPollInterval = 20ms;
constexpr std::size_t kLogTailLines = 150;

// The environments alive right now, for the failure listener.
std::vector<TestEnv*>& live_envs() {
    static std::vector<TestEnv*> envs;
    return envs;
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

std::string read_whole_file(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string last_lines(const std::string& text, std::size_t count) {
    std::size_t at = text.size();
    for (std::size_t seen = 0; at > 0; --at) {
        if (text[at - 1] == '\n' && at != text.size() && ++seen == count) break;
    }
    return (at > 0 ? "[...]\n" : "") + text.substr(at);
}

std::string location(const std::source_location& where) {
    return std::string(where.file_name()) + ":" + std::to_string(where.line());
}

}  // namespace

// Print the daemon log of every live TestEnv (once each).
void report_live_daemon_logs() {
    for (TestEnv* env : live_envs()) env->report_failure();
}

}  // namespace integration

namespace {

// Prints the daemon logs when an assertion fails, before the TestEnv destructors run.
class DaemonLogOnFailure : public Catch::TestEventListenerBase {
public:
    using TestEventListenerBase::TestEventListenerBase;

    bool assertionEnded(const Catch::AssertionStats& stats) override {
        if (!stats.assertionResult.isOk()) integration::report_live_daemon_logs();
        return true;
    }
};

}  // namespace

CATCH_REGISTER_LISTENER(DaemonLogOnFailure)

namespace integration {

std::string bin(const std::string& name) {
    return std::string(MCPD_BIN_DIR) + "/" + name;
}

std::string toml_string(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

std::string server_toml(const std::string& name, const std::vector<std::string>& args,
                        const std::map<std::string, std::string>& settings,
                        const std::string& command) {
    std::map<std::string, std::string> values = {
        {"restart_delay", "\"100ms\""},
        {"stop_grace", "\"300ms\""},
        {"stop_timeout", "\"300ms\""},
        {"start_timeout", "\"10s\""},
    };
    for (const auto& [key, value] : settings) values[key] = value;
    std::string args_text;
    for (const std::string& arg : args)
        args_text += (args_text.empty() ? "" : ", ") + toml_string(arg);
    std::string text = "[servers." + name + "]\n";
    text += "command = " + toml_string(command) + "\n";
    text += "args = [" + args_text + "]\n";
    text += "env = { " + std::string(kMarkerVariable) + " = \"@MARKER@\" }\n";
    for (const auto& [key, value] : values) text += key + " = " + value + "\n";
    return text + "\n";
}

bool poll_until(Duration timeout, const std::function<bool()>& predicate) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        if (predicate()) return true;
        if (Clock::now() >= deadline) return false;
        std::this_thread::sleep_for(kPollInterval);
    }
}

void wait_until(const std::string& what, Duration timeout, const std::function<bool()>& predicate,
                std::source_location where) {
    const auto start = Clock::now();
    if (poll_until(timeout, predicate)) return;
    INFO("waited at " << location(where));
    FAIL("timed out after " << ms_since(start) << " ms waiting until " << what);
}

int expect_no_lasting_zombies(pid_t parent, Duration observe, Duration limit,
                              std::source_location where) {
    const auto start = Clock::now();
    std::map<pid_t, Clock::time_point> first_seen;
    int short_lived = 0;
    for (;;) {
        const auto now = Clock::now();
        const std::vector<pid_t> zombies = zombie_children_of(parent);
        for (auto it = first_seen.begin(); it != first_seen.end();) {
            if (std::find(zombies.begin(), zombies.end(), it->first) == zombies.end()) {
                ++short_lived;
                it = first_seen.erase(it);
            } else {
                ++it;
            }
        }
        for (pid_t pid : zombies) {
            const auto [it, added] = first_seen.emplace(pid, now);
            if (now - it->second > limit) {
                INFO("checked at " << location(where));
                FAIL("child " << describe_processes({pid}) << " of mcpd " << parent
                              << " has been a zombie for more than " << limit.count() << " ms");
            }
        }
        if (now - start >= observe && first_seen.empty()) return short_lived;
        std::this_thread::sleep_for(10ms);
    }
}

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t count = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos;
         at = text.find(needle, at + 1))
        ++count;
    return count;
}

long long ms_since(Clock::time_point start) {
    return std::chrono::duration_cast<Duration>(Clock::now() - start).count();
}

TestEnv::TestEnv(const std::string& name) {
    std::string pattern = "/tmp/mcpd-it-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    socket_ = dir_ + "/mcpd.sock";
    registry_ = dir_ + "/registry.toml";
    static std::atomic<int> counter{0};
    marker_ = name + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
    live_envs().push_back(this);
}

TestEnv::~TestEnv() {
    try {
        if (daemon_) daemon_->terminate();
    } catch (...) {
        std::cerr << "cleanup: could not stop the mcpd of test " << marker_ << "\n";
    }
    daemon_.reset();  // its destructor kills and reaps it if it still runs
    // Whatever still carries our marker escaped its mcpd (the daemon was killed, or leaked
    // it): these are descendants of the mcpd this test started, so end them here.
    for (pid_t pid : processes_with_marker(marker_)) {
        std::cerr << "cleanup: killing leftover server process " << describe_processes({pid})
                  << " of test " << marker_ << "\n";
        ::kill(pid, SIGKILL);
    }
    auto& envs = live_envs();
    envs.erase(std::remove(envs.begin(), envs.end(), this), envs.end());
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

void TestEnv::write_registry(const std::string& text) const {
    const std::string tmp = registry_ + ".tmp";
    {
        std::ofstream out(tmp);
        out << replace_all(text, "@MARKER@", marker_);
        if (!out) throw std::runtime_error("cannot write " + tmp);
    }
    // Atomic, so a reload never reads half a file.
    std::filesystem::rename(tmp, registry_);
}

DaemonProcess& TestEnv::start_daemon(Duration timeout) {
    if (daemon_) throw std::logic_error("the test's mcpd is already running");
    const std::string log = path("mcpd.log");
    if (std::find(log_files_.begin(), log_files_.end(), log) == log_files_.end())
        log_files_.push_back(log);
    daemon_ = std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", registry_, "--socket", socket_}, log, fd_limit_,
        daemon_environment());
    const bool up = poll_until(timeout, [&] {
        if (daemon_->poll_exit()) return true;
        return ctl({"version"}, 5s).exit_code == 0;
    });
    if (const auto status = daemon_->poll_exit())
        FAIL("mcpd exited with status " << *status << " while starting");
    if (!up) FAIL("mcpd did not answer `mcpctl version` within " << timeout.count() << " ms");
    return *daemon_;
}

DaemonProcess& TestEnv::daemon() {
    if (!daemon_) throw std::logic_error("the test has no mcpd running");
    return *daemon_;
}

std::unique_ptr<DaemonProcess> TestEnv::spawn_daemon(const std::string& log_name) {
    const std::string log = path(log_name);
    log_files_.push_back(log);
    return std::make_unique<DaemonProcess>(
        std::vector<std::string>{"--config", registry_, "--socket", socket_}, log, fd_limit_,
        daemon_environment());
}

void TestEnv::drop_daemon() {
    if (daemon_) daemon_->kill_hard();  // a no-op once it has been reaped
    daemon_.reset();
}

RunResult TestEnv::ctl(const std::vector<std::string>& args, Duration timeout) const {
    std::vector<std::string> argv{bin("mcpctl"), "--socket", socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, timeout);
}

nlohmann::json TestEnv::status_json() const {
    const RunResult result = ctl({"--json", "status"}, 30s);
    if (result.exit_code != 0) FAIL("mcpctl --json status failed: " << result.describe());
    nlohmann::json parsed = nlohmann::json::parse(result.out, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object())
        FAIL("mcpctl --json status printed something that is not a JSON object: " << result.out);
    return parsed;
}

nlohmann::json TestEnv::server(const std::string& name) const {
    const nlohmann::json status = status_json();
    for (const auto& entry : status.value("servers", nlohmann::json::array())) {
        if (entry.value("name", "") == name) return entry;
    }
    return nullptr;
}

std::string TestEnv::state(const std::string& name) const {
    const nlohmann::json entry = server(name);
    return entry.is_object() ? entry.value("state", "?") : "(not listed)";
}

std::optional<pid_t> TestEnv::server_pid(const std::string& name) const {
    const nlohmann::json entry = server(name);
    if (!entry.is_object() || !entry["pid"].is_number_integer()) return std::nullopt;
    return entry["pid"].get<pid_t>();
}

void TestEnv::wait_state(const std::string& name, const std::string& wanted, Duration timeout,
                         std::source_location where) const {
    const auto start = Clock::now();
    nlohmann::json last;
    const bool reached = poll_until(timeout, [&] {
        last = server(name);
        return last.is_object() && last.value("state", "") == wanted;
    });
    if (reached) return;
    INFO("waited at " << location(where));
    FAIL("timed out after " << ms_since(start) << " ms waiting until server '" << name << "' is "
                            << wanted << "; last status: " << last.dump());
}

std::vector<std::string> TestEnv::daemon_environment() const {
    return {"STATE_DIRECTORY=" + path("state"), "CACHE_DIRECTORY=" + path("cache")};
}

std::string TestEnv::daemon_log() const {
    std::string text;
    for (const std::string& file : log_files_) {
        text += "==== " + file + " ====\n" + read_whole_file(file);
    }
    return text;
}

void TestEnv::report_failure() {
    if (reported_) return;
    reported_ = true;
    std::cerr << "\n---- mcpd log of " << marker_ << " (last " << kLogTailLines << " lines) ----\n"
              << last_lines(daemon_log(), kLogTailLines) << "\n---- end of mcpd log ----\n"
              << std::flush;
}

}  // namespace integration
