#include "connection_flood.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

namespace integration {

namespace {

using nlohmann::json;

// Descriptors the child keeps besides its connections (stdio, its two pipes, slack).
constexpr int kSpareFds = 64;
// Bounds a connect() while mcpd's backlog is full (a Unix connect blocks meanwhile).
constexpr timeval kConnectTimeout{5, 0};

long long ms_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration_cast<Duration>(to - from).count();
}

bool write_all(int fd, const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        done += static_cast<std::size_t>(n);
    }
    return true;
}

// One line from `fd` (without '\n'); "" at EOF or past `timeout`.
std::string read_line(int fd, Duration timeout) {
    const auto deadline = Clock::now() + timeout;
    std::string line;
    char c = 0;
    for (;;) {
        const auto left = std::max<long long>(0, ms_between(Clock::now(), deadline));
        pollfd pfd{fd, POLLIN, 0};
        const int ready = ::poll(&pfd, 1, static_cast<int>(left));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return "";
        const ssize_t n = ::read(fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return "";
        if (c == '\n') return line;
        line += c;
    }
}

// One held connection in the child.
struct Held {
    int fd = -1;
    std::string received;
    bool closed = false;
};

// The answer code of what a connection received: the "code" of its first line's error.
std::string answer_of(const Held& held) {
    const auto newline = held.received.find('\n');
    if (newline == std::string::npos) return held.received.empty() ? "none" : "partial";
    const json reply = json::parse(held.received.substr(0, newline), nullptr, false);
    if (reply.is_discarded() || !reply.is_object()) return "garbage";
    if (reply.value("ok", false)) return "ok";
    const json error = reply.value("error", json::object());
    return error.is_object() ? error.value("code", "no code") : "no code";
}

// Read every open connection until all are closed or `within` has passed; report as JSON.
std::string check_connections(std::vector<Held>& held, Duration within) {
    const auto start = Clock::now();
    const auto deadline = start + within;
    long long all_closed_ms = -1;
    for (;;) {
        std::vector<pollfd> fds;
        std::vector<Held*> owners;
        for (Held& h : held) {
            if (h.closed) continue;
            fds.push_back(pollfd{h.fd, POLLIN, 0});
            owners.push_back(&h);
        }
        if (fds.empty()) {
            all_closed_ms = ms_between(start, Clock::now());
            break;
        }
        const long long left = ms_between(Clock::now(), deadline);
        if (left <= 0) break;
        const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(std::min(left, 100LL)));
        if (ready < 0 && errno != EINTR) break;
        for (std::size_t i = 0; ready > 0 && i < fds.size(); ++i) {
            if (fds[i].revents == 0) continue;
            char chunk[4096];
            const ssize_t n = ::recv(fds[i].fd, chunk, sizeof chunk, MSG_DONTWAIT);
            if (n > 0) {
                owners[i]->received.append(chunk, static_cast<std::size_t>(n));
            } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
                owners[i]->closed = true;
                ::close(owners[i]->fd);
            }
        }
    }
    json report = {
        {"open", 0}, {"closed", 0}, {"answers", json::object()}, {"all_closed_ms", all_closed_ms}};
    for (const Held& h : held) {
        report[h.closed ? "closed" : "open"] = report[h.closed ? "closed" : "open"].get<int>() + 1;
        const std::string code = answer_of(h);
        report["answers"][code] = report["answers"].value(code, 0) + 1;
    }
    return report.dump() + "\n";
}

// The child: become the user, connect, then obey "check MS" and "quit" lines on `commands`.
[[noreturn]] void run_flood(const std::string& socket_path, uid_t uid, gid_t gid, int count,
                            int commands, int replies) {
    const rlimit room{static_cast<rlim_t>(count + kSpareFds),
                      static_cast<rlim_t>(count + kSpareFds)};
    rlimit current{};
    ::getrlimit(RLIMIT_NOFILE, &current);
    if (current.rlim_cur < room.rlim_cur && ::setrlimit(RLIMIT_NOFILE, &room) != 0) _exit(10);
    if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 ||
        ::setresuid(uid, uid, uid) != 0)
        _exit(11);

    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    std::vector<Held> held;
    std::string first_error;
    for (int i = 0; i < count; ++i) {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            if (first_error.empty()) first_error = std::string("socket: ") + std::strerror(errno);
            continue;
        }
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &kConnectTimeout, sizeof kConnectTimeout);
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
            // Timed out on a full backlog: mcpd has stopped accepting, and would only make
            // every further attempt wait as long.
            first_error = std::string("connect: ") + std::strerror(errno);
            ::close(fd);
            break;
        }
        held.push_back(Held{fd, {}, false});
    }
    write_all(replies, json{{"connected", held.size()}, {"error", first_error}}.dump() + "\n");
    for (;;) {
        const std::string command = read_line(commands, std::chrono::hours(1));
        if (command.rfind("check ", 0) == 0) {
            write_all(replies, check_connections(held, Duration(std::stoll(command.substr(6)))));
            continue;
        }
        _exit(0);  // "quit", or the test went away
    }
}

}  // namespace

std::string ConnectionFlood::Check::describe() const {
    std::string text = "open " + std::to_string(open) + ", closed " + std::to_string(closed);
    for (const auto& [code, n] : answers) text += ", " + code + " " + std::to_string(n);
    return text + (all_closed_ms >= 0
                       ? ", all closed after " + std::to_string(all_closed_ms) + " ms"
                       : "");
}

ConnectionFlood::ConnectionFlood(const std::string& socket_path, uid_t uid, gid_t gid, int count) {
    if (socket_path.size() >= sizeof(sockaddr_un::sun_path))
        FAIL("socket path too long for a connection flood: " << socket_path);
    int to_child[2];
    int from_child[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
        FAIL("pipe2: " << std::strerror(errno));
    const pid_t parent = ::getpid();
    const auto start = Clock::now();
    pid_ = ::fork();
    if (pid_ < 0) FAIL("fork: " << std::strerror(errno));
    if (pid_ == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) _exit(12);
        ::close(to_child[1]);
        ::close(from_child[0]);
        run_flood(socket_path, uid, gid, count, to_child[0], from_child[1]);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    to_child_ = to_child[1];
    from_child_ = from_child[0];
    const std::string report = read_line(from_child_, 120s);
    connect_ms_ = ms_between(start, Clock::now());
    const json parsed = json::parse(report, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) {
        int status = 0;
        const pid_t done = ::waitpid(pid_, &status, WNOHANG);
        FAIL("the connection flood as uid "
             << uid << " did not report its connections"
             << (done == pid_
                     ? " (it exited with status " + std::to_string(decode_wait_status(status)) + ")"
                     : std::string()));
    }
    connected_ = parsed.value("connected", 0);
    connect_error_ = parsed.value("error", "");
}

ConnectionFlood::~ConnectionFlood() {
    if (to_child_ >= 0) {
        write_all(to_child_, "quit\n");
        ::close(to_child_);
    }
    if (from_child_ >= 0) ::close(from_child_);
    if (pid_ <= 0) return;
    const auto deadline = Clock::now() + 10s;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
        if (Clock::now() >= deadline) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
            return;
        }
        ::usleep(5000);
    }
}

ConnectionFlood::Check ConnectionFlood::check(Duration within) {
    const std::string report = request("check " + std::to_string(within.count()), within + 30s);
    const json parsed = json::parse(report, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object())
        FAIL("the connection flood did not report on its connections: '" << report << "'");
    Check out;
    out.open = parsed.value("open", 0);
    out.closed = parsed.value("closed", 0);
    out.all_closed_ms = parsed.value("all_closed_ms", -1LL);
    for (const auto& [code, n] : parsed["answers"].items()) out.answers[code] = n.get<int>();
    return out;
}

std::string ConnectionFlood::request(const std::string& line, Duration timeout) {
    if (!write_all(to_child_, line + "\n")) FAIL("the connection flood has gone away");
    return read_line(from_child_, timeout);
}

}  // namespace integration
