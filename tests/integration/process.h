// Child processes of the test: one-shot commands whose output is captured, and long-running
// ones (mcpd itself, `mcpctl logs -f`) that are always stopped and reaped on destruction.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <optional>
#include <string>
#include <vector>

namespace integration {

using Duration = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// An exit status as mcpd reports one: the exit code, or minus the signal number.
int decode_wait_status(int status);

// What a finished command left behind.
struct RunResult {
    int exit_code = -1;  // decoded as above
    std::string out;
    std::string err;
    bool timed_out = false;  // it was killed after the deadline
    Duration took{};

    // "exit 1, stdout: ..., stderr: ..." for failure messages.
    std::string describe() const;
};

// The environment for every child: ours, with MCPD_BIN_DIR first on PATH.
std::vector<std::string> child_environment();

// Run argv[0] (a path) to completion, stdin from /dev/null, capturing stdout and stderr.
// Past `timeout` the process is killed and reaped, and timed_out is set.
RunResult run_process(const std::vector<std::string>& argv, Duration timeout = 60s);

// A process started in the background whose stdout and stderr (merged) are read on demand.
// The destructor interrupts it (SIGINT, then SIGKILL) and reaps it.
class BackgroundProcess {
public:
    explicit BackgroundProcess(const std::vector<std::string>& argv);
    ~BackgroundProcess();
    BackgroundProcess(const BackgroundProcess&) = delete;
    BackgroundProcess& operator=(const BackgroundProcess&) = delete;

    pid_t pid() const { return pid_; }
    // Everything it printed so far (reads what is pending first).
    const std::string& output();
    // Wait until its output contains `needle` `count` times; false on timeout.
    bool wait_for_output(const std::string& needle, Duration timeout, int count = 1);
    // Send `signo` and wait for the exit; returns the decoded status (SIGKILL past timeout).
    int stop(int signo = SIGINT, Duration timeout = 10s);

private:
    void pump(Duration wait);

    pid_t pid_ = -1;
    int out_fd_ = -1;
    std::string output_;
    std::optional<int> status_;
};

// An mcpd in the foreground with stdout and stderr appended to a log file. The destructor
// terminates it (SIGTERM, then SIGKILL as a last resort) and always reaps it. With
// `max_open_files`, its RLIMIT_NOFILE is set to that (soft and hard) before exec.
class DaemonProcess {
public:
    // `extra_env`: NAME=VALUE entries added to the environment it inherits.
    DaemonProcess(const std::vector<std::string>& args, std::string log_path,
                  std::optional<unsigned long> max_open_files = std::nullopt,
                  const std::vector<std::string>& extra_env = {});
    ~DaemonProcess();
    DaemonProcess(const DaemonProcess&) = delete;
    DaemonProcess& operator=(const DaemonProcess&) = delete;

    pid_t pid() const { return pid_; }
    const std::string& log_path() const { return log_path_; }
    std::string log() const;

    // Send a signal to this mcpd (our own child), unless it has been reaped already.
    void signal(int signo) const;
    // The decoded exit status once it has exited (reaping it); nullopt while it runs.
    std::optional<int> poll_exit();
    // Wait up to `timeout` for it to exit on its own.
    std::optional<int> wait_exit(Duration timeout);
    // SIGTERM, wait up to `grace`, then SIGKILL; returns the decoded status.
    int terminate(Duration grace = 20s);
    // SIGKILL and reap.
    int kill_hard();

private:
    pid_t pid_ = -1;
    std::string log_path_;
    std::optional<int> status_;
};

}  // namespace integration
