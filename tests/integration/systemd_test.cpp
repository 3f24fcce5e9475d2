// systemd glue without systemd as PID 1: a fake NOTIFY_SOCKET records what mcpd reports, and a
// listening socket handed over as fd 3 with LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES stands in for
// socket activation.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness.h"

using namespace integration;

namespace {

struct Notification {
    std::string text;
    pid_t sender = 0;
};

// An AF_UNIX datagram socket like systemd's notify socket, reporting each sender's pid.
class FakeNotifySocket {
public:
    explicit FakeNotifySocket(const std::string& path) : path_(path) {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        const int on = 1;
        ::setsockopt(fd_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on);
    }
    ~FakeNotifySocket() {
        ::close(fd_);
        ::unlink(path_.c_str());
    }

    // Read whatever arrives within `wait`.
    void pump(Duration wait) {
        const auto deadline = Clock::now() + wait;
        for (;;) {
            const auto left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
            if (left.count() <= 0) return;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return;
            char data[4096];
            iovec iov{data, sizeof data};
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            const ssize_t n = ::recvmsg(fd_, &msg, 0);
            if (n <= 0) continue;
            Notification note{std::string(data, static_cast<std::size_t>(n)), 0};
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_type == SCM_CREDENTIALS) {
                    ucred cred{};
                    std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
                    note.sender = cred.pid;
                }
            }
            received.push_back(note);
        }
    }
    bool wait_for(const std::string& needle, Duration timeout) {
        return poll_until(timeout, [&] {
            pump(20ms);
            return index_of(needle) >= 0;
        });
    }
    int index_of(const std::string& needle, int from = 0) const {
        for (int i = from; i < static_cast<int>(received.size()); ++i) {
            if (received[static_cast<std::size_t>(i)].text.find(needle) != std::string::npos) return i;
        }
        return -1;
    }
    int count_of_text(const std::string& needle) const {
        int n = 0;
        for (const auto& r : received) n += r.text.find(needle) != std::string::npos ? 1 : 0;
        return n;
    }

    std::vector<Notification> received;

private:
    std::string path_;
    int fd_ = -1;
};

int listening_socket(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);  // blocking, as systemd passes it
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    return fd;
}

// mcpd as systemd would start it: extra environment, optionally the listening socket on fd 3.
pid_t start_like_systemd(TestEnv& env, const std::vector<std::string>& extra_env, int listen_fd) {
    const std::string log = env.path("mcpd.log");
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        ::dup2(log_fd, STDOUT_FILENO);
        ::dup2(log_fd, STDERR_FILENO);
        if (listen_fd >= 0) {
            ::dup2(listen_fd, 3);
            ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
            ::setenv("LISTEN_FDS", "1", 1);
            ::setenv("LISTEN_FDNAMES", "control", 1);
        }
        for (const std::string& kv : extra_env) ::putenv(const_cast<char*>(kv.c_str()));
        const std::string path = std::string("PATH=") + MCPD_BIN_DIR + ":/usr/local/bin:/usr/bin:/bin";
        ::putenv(const_cast<char*>(path.c_str()));
        const std::string mcpd = std::string(MCPD_BIN_DIR) + "/mcpd";
        ::execl(mcpd.c_str(), mcpd.c_str(), "--config", env.registry().c_str(), "--socket",
                env.socket().c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    return pid;
}

int stop_and_reap(pid_t pid) {
    ::kill(pid, SIGTERM);
    int status = 0;
    if (!poll_until(20s, [&] { return ::waitpid(pid, &status, WNOHANG) == pid; })) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
    }
    return status;
}

// Stops and reaps the mcpd a test started by hand, even when an assertion ends the test early.
struct StartedDaemon {
    pid_t pid;
    int status = -1;
    ~StartedDaemon() {
        if (pid > 0) stop_and_reap(pid);
    }
    int stop() {
        status = stop_and_reap(pid);
        pid = -1;
        return status;
    }
};

}  // namespace

TEST_CASE("mcpd reports READY, STATUS, RELOADING, WATCHDOG and STOPPING to systemd, across an upgrade too",
          "[systemd]") {
    TestEnv env("notify");
    env.write_registry(server_toml("demo"));
    FakeNotifySocket notify(env.path("notify.sock"));
    const std::string notify_env = "NOTIFY_SOCKET=" + env.path("notify.sock");
    StartedDaemon daemon{start_like_systemd(env, {notify_env, "WATCHDOG_USEC=400000"}, -1)};
    const pid_t pid = daemon.pid;

    REQUIRE(notify.wait_for("READY=1", 20s));
    const auto& ready = notify.received[static_cast<std::size_t>(notify.index_of("READY=1"))];
    CHECK(ready.sender == pid);  // what NotifyAccess=main checks
    CHECK(ready.text.find("STATUS=") != std::string::npos);

    // Watchdog pings come from the main loop at half the interval.
    notify.pump(2000ms);
    const int pings = notify.count_of_text("WATCHDOG=1");
    WARN(pings << " WATCHDOG=1 in 2 s with WATCHDOG_USEC=400000");
    CHECK(pings >= 2);

    ::kill(pid, SIGHUP);
    REQUIRE(notify.wait_for("RELOADING=1", 20s));
    const int reloading = notify.index_of("RELOADING=1");
    CHECK(notify.received[static_cast<std::size_t>(reloading)].text.find("MONOTONIC_USEC=") !=
          std::string::npos);
    CHECK(poll_until(20s, [&] {
        notify.pump(20ms);
        return notify.index_of("READY=1", reloading + 1) > reloading;
    }));

    // An upgrade in place: RELOADING=1 (with MONOTONIC_USEC) before the exec, READY=1 from the
    // new binary after it, both from the same pid, so systemd keeps its main pid.
    notify.pump(50ms);
    const int before_upgrade = static_cast<int>(notify.received.size());
    const RunResult upgraded = env.ctl({"upgrade", "--wait"});
    INFO(upgraded.describe());
    REQUIRE(upgraded.exit_code == 0);
    REQUIRE(poll_until(20s, [&] {
        notify.pump(20ms);
        return notify.index_of("RELOADING=1", before_upgrade) >= before_upgrade;
    }));
    const int upgrading = notify.index_of("RELOADING=1", before_upgrade);
    CHECK(notify.received[static_cast<std::size_t>(upgrading)].text.find("MONOTONIC_USEC=") !=
          std::string::npos);
    CHECK(poll_until(20s, [&] {
        notify.pump(20ms);
        return notify.index_of("READY=1", upgrading + 1) > upgrading;
    }));

    const int status = daemon.stop();
    notify.pump(300ms);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    const int stopping = notify.index_of("STOPPING=1");
    CHECK(stopping > upgrading);
    CHECK(notify.index_of("EXTEND_TIMEOUT_USEC=", stopping) >= stopping);
    for (const auto& n : notify.received) CHECK(n.sender == pid);
}

TEST_CASE("mcpd takes its control socket from systemd and leaves it in place", "[systemd]") {
    TestEnv env("activation");
    // The server records its environment: systemd's variables must not reach it.
    const std::string env_dump = env.path("child.env");
    env.write_registry(server_toml("demo", {"-c", "env > " + env_dump + "; exec mcpd-demo-server"},
                                   {}, "sh"));
    const int listen_fd = listening_socket(env.socket());
    FakeNotifySocket notify(env.path("notify.sock"));
    StartedDaemon daemon{start_like_systemd(
        env, {"NOTIFY_SOCKET=" + env.path("notify.sock"), "WATCHDOG_USEC=10000000"}, listen_fd)};
    ::close(listen_fd);

    // Without socket activation mcpd would find a live socket on the path and refuse to start.
    REQUIRE(poll_until(20s, [&] { return env.ctl({"version"}, 5s).exit_code == 0; }));
    env.wait_state("demo", "running");
    CHECK(notify.wait_for("READY=1", 10s));
    std::string child_env;
    {
        std::ifstream in(env_dump);
        std::ostringstream text;
        text << in.rdbuf();
        child_env = text.str();
    }
    INFO(child_env);
    CHECK(child_env.find("PATH=") != std::string::npos);
    for (const char* variable : {"NOTIFY_SOCKET=", "LISTEN_PID=", "LISTEN_FDS=", "LISTEN_FDNAMES=",
                                 "WATCHDOG_USEC="}) {
        CHECK(child_env.find(variable) == std::string::npos);
    }
    const int status = daemon.stop();
    CHECK(WIFEXITED(status));
    // The socket unit owns the file: mcpd must not remove it.
    struct stat st {};
    CHECK(::stat(env.socket().c_str(), &st) == 0);
}
