#include "process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace bench {

Child::Child(const std::vector<std::string>& argv, const Options& options) {
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (options.pipes && (::pipe2(in, O_CLOEXEC) < 0 || ::pipe2(out, O_CLOEXEC) < 0)) {
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
    // Everything the child needs is prepared before fork: only async-signal-safe calls after.
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry = *e;
        const std::string name = entry.substr(0, entry.find('='));
        if (!options.env.contains(name)) env_text.push_back(entry);
    }
    for (const auto& [name, value] : options.env) env_text.push_back(name + "=" + value);
    std::vector<char*> envp, args;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& a : argv_copy) args.push_back(a.data());
    args.push_back(nullptr);
    const std::string err_path = options.stderr_path.empty() ? "/dev/null" : options.stderr_path;

    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid_ == 0) {
        const int null = ::open("/dev/null", O_RDWR);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        ::dup2(options.pipes ? in[0] : null, STDIN_FILENO);
        ::dup2(options.pipes ? out[1] : null, STDOUT_FILENO);
        ::dup2(err >= 0 ? err : null, STDERR_FILENO);
        // Should the benchmark die without cleaning up, its processes get SIGTERM.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        ::execve(args[0], args.data(), envp.data());
        ::_exit(127);
    }
    if (options.pipes) {
        ::close(in[0]);
        ::close(out[1]);
        stdin_ = in[1];
        stdout_ = out[0];
    }
}

Child::~Child() {
    if (stdin_ >= 0) ::close(stdin_);
    if (stdout_ >= 0) ::close(stdout_);
    stop();
}

bool Child::running() {
    if (reaped_) return false;
    const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
    if (r == pid_) reaped_ = true;
    return !reaped_;
}

int Child::stop(int grace_ms) {
    if (!running()) return status_;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
    while (running() && std::chrono::steady_clock::now() < deadline) sleep_ms(5);
    if (running()) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        reaped_ = true;
    }
    return status_;
}

TempDir::TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/mcpd-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    }
    path_ = pattern;
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void raise_fd_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
}

void sleep_ms(int ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace bench
