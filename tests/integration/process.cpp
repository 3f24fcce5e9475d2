#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/child_setup.h"

extern char** environ;

namespace integration {

namespace {

// A pipe whose ends close on exec; the child dups the end it needs onto 0-2.
std::array<int, 2> make_pipe() {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0)
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    return fds;
}

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

// fork + execve of argv[0] with the given fds on 0, 1 and 2. The child dies with us. With
// `max_open_files`, RLIMIT_NOFILE is lowered to it before exec.
pid_t spawn(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd,
            std::optional<unsigned long> max_open_files = std::nullopt,
            const std::vector<std::string>& extra_env = {}) {
    if (argv.empty() || argv[0].empty() || argv[0][0] != '/')
        throw std::runtime_error("spawn wants an absolute program path");
    std::vector<std::string> env = child_environment();
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> c_argv = c_strings(argv);
    std::vector<char*> c_env = c_strings(env);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid > 0) return pid;

    mcpd::prepare_forked_child(parent);
    if (::dup2(in_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 ||
        ::dup2(err_fd, STDERR_FILENO) < 0)
        _exit(126);
    if (max_open_files) {
        const rlimit limit{*max_open_files, *max_open_files};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) _exit(125);
    }
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    const std::string message = "cannot execute " + argv[0] + ": " + std::strerror(errno) + "\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, message.data(), message.size());
    _exit(127);
}

int open_dev_null() {
    const int fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(std::string("/dev/null: ") + std::strerror(errno));
    return fd;
}

// Read what is available on `fd` into `into`; false at EOF or on an error.
bool read_some(int fd, std::string& into) {
    char buffer[65536];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
        into.append(buffer, static_cast<std::size_t>(n));
        return true;
    }
    return n < 0 && (errno == EINTR || errno == EAGAIN);
}

// waitpid with a deadline; nullopt when it has not exited by then.
std::optional<int> wait_for_exit(pid_t pid, Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        int status = 0;
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) return decode_wait_status(status);
        if (r < 0 && errno != EINTR)
            throw std::runtime_error("waitpid: " + std::string(std::strerror(errno)));
        if (Clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(5ms);
    }
}

// Kill and reap, for processes past their deadline.
int kill_and_reap(pid_t pid) {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return decode_wait_status(status);
}

}  // namespace

int decode_wait_status(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return -WTERMSIG(status);
    return status;
}

std::string RunResult::describe() const {
    std::ostringstream text;
    text << "exit " << exit_code << (timed_out ? " (killed after the timeout)" : "") << " in "
         << took.count() << " ms\n--- stdout ---\n"
         << out << "\n--- stderr ---\n"
         << err << "\n---";
    return text.str();
}

std::vector<std::string> child_environment() {
    std::vector<std::string> env;
    const char* path = std::getenv("PATH");
    env.push_back(std::string("PATH=") + MCPD_BIN_DIR + ":" +
                  (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
    for (char** p = environ; p != nullptr && *p != nullptr; ++p) {
        const std::string entry(*p);
        if (entry.starts_with("PATH=") || entry.starts_with("MCPD_SOCKET=") ||
            entry.starts_with("NOTIFY_SOCKET=") || entry.starts_with("LISTEN_") ||
            entry.starts_with("STATE_DIRECTORY="))
            continue;
        env.push_back(entry);
    }
    return env;
}

RunResult run_process(const std::vector<std::string>& argv, Duration timeout) {
    RunResult result;
    const auto started = Clock::now();
    const auto deadline = started + timeout;
    auto out = make_pipe();
    auto err = make_pipe();
    int null_fd = open_dev_null();
    const pid_t pid = spawn(argv, null_fd, out[1], err[1]);
    close_fd(null_fd);
    close_fd(out[1]);
    close_fd(err[1]);

    std::array<pollfd, 2> fds{pollfd{out[0], POLLIN, 0}, pollfd{err[0], POLLIN, 0}};
    std::array<std::string*, 2> sinks{&result.out, &result.err};
    while ((fds[0].fd >= 0 || fds[1].fd >= 0) && !result.timed_out) {
        const auto left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
        if (left <= 0ms) {
            result.timed_out = true;
            break;
        }
        const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
        if (ready < 0 && errno != EINTR) break;
        for (std::size_t i = 0; i < fds.size(); ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            if (!read_some(fds[i].fd, *sinks[i])) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
            }
        }
    }
    for (auto& fd : fds)
        if (fd.fd >= 0) ::close(fd.fd);

    std::optional<int> status;
    if (!result.timed_out) {
        const auto left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
        status = wait_for_exit(pid, std::max(left, 0ms));
    }
    if (!status) {
        result.timed_out = true;
        status = kill_and_reap(pid);
    }
    result.exit_code = *status;
    result.took = std::chrono::duration_cast<Duration>(Clock::now() - started);
    return result;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv) {
    auto out = make_pipe();
    int null_fd = open_dev_null();
    pid_ = spawn(argv, null_fd, out[1], out[1]);
    close_fd(null_fd);
    close_fd(out[1]);
    out_fd_ = out[0];
    ::fcntl(out_fd_, F_SETFL, ::fcntl(out_fd_, F_GETFL) | O_NONBLOCK);
}

BackgroundProcess::~BackgroundProcess() {
    try {
        if (!status_) stop(SIGINT, 5s);
    } catch (...) {
        if (!status_) kill_and_reap(pid_);
    }
    close_fd(out_fd_);
}

void BackgroundProcess::pump(Duration wait) {
    if (out_fd_ < 0) return;
    pollfd fd{out_fd_, POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(wait.count())) <= 0) return;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(out_fd_, buffer, sizeof buffer);
        if (n > 0) {
            output_.append(buffer, static_cast<std::size_t>(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        close_fd(out_fd_);  // EOF or an error: nothing more will come
        return;
    }
}

const std::string& BackgroundProcess::output() {
    pump(0ms);
    return output_;
}

bool BackgroundProcess::wait_for_output(const std::string& needle, Duration timeout, int count) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        int found = 0;
        for (std::size_t at = output_.find(needle); at != std::string::npos;
             at = output_.find(needle, at + needle.size()))
            ++found;
        if (found >= count) return true;
        const auto left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
        if (left <= 0ms || out_fd_ < 0) return false;
        pump(std::min(left, Duration(20)));
    }
}

int BackgroundProcess::stop(int signo, Duration timeout) {
    if (status_) return *status_;
    ::kill(pid_, signo);
    status_ = wait_for_exit(pid_, timeout);
    if (!status_) status_ = kill_and_reap(pid_);
    pump(0ms);
    return *status_;
}

DaemonProcess::DaemonProcess(const std::vector<std::string>& args, std::string log_path,
                             std::optional<unsigned long> max_open_files,
                             const std::vector<std::string>& extra_env)
    : log_path_(std::move(log_path)) {
    int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0)
        throw std::runtime_error("cannot open " + log_path_ + ": " + std::strerror(errno));
    int null_fd = open_dev_null();
    std::vector<std::string> argv{std::string(MCPD_BIN_DIR) + "/mcpd"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = spawn(argv, null_fd, log_fd, log_fd, max_open_files, extra_env);
    close_fd(null_fd);
    close_fd(log_fd);
}

DaemonProcess::~DaemonProcess() {
    try {
        terminate();
    } catch (...) {
        kill_hard();
    }
}

std::string DaemonProcess::log() const {
    std::ifstream in(log_path_);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void DaemonProcess::signal(int signo) const {
    if (!status_) ::kill(pid_, signo);
}

std::optional<int> DaemonProcess::poll_exit() {
    if (!status_) status_ = wait_for_exit(pid_, 0ms);
    return status_;
}

std::optional<int> DaemonProcess::wait_exit(Duration timeout) {
    if (!status_) status_ = wait_for_exit(pid_, timeout);
    return status_;
}

int DaemonProcess::terminate(Duration grace) {
    if (status_) return *status_;
    ::kill(pid_, SIGTERM);
    status_ = wait_for_exit(pid_, grace);
    if (!status_) status_ = kill_and_reap(pid_);
    return *status_;
}

int DaemonProcess::kill_hard() {
    if (!status_) status_ = kill_and_reap(pid_);
    return *status_;
}

}  // namespace integration
