// bench-relay: the floor every mcpd figure of docs/PERFORMANCE.md is reported against.
//
//   bench-relay serve --socket PATH [--init] -- COMMAND [ARGS...]
//   bench-relay bridge --socket PATH
//
// `serve` runs COMMAND on pipes and forwards whole lines between it and every connection on a
// Unix socket, parsing nothing: a plain epoll loop; lines read together go out together, one
// write per destination. A line from the child goes to the connection that sent the oldest
// line not yet answered, which is right for a child that answers every line with exactly one
// line, in order (the benchmark's workload: tools/call echo and large on mcpd-demo-server);
// it is forwarded as it arrives, without waiting for its end (a connection that falls more
// than 1 MiB behind pauses the child). Lines from connections go to the child whole, so they
// never interleave. `--init` performs the MCP initialize handshake with the child first, so
// clients only send requests.
//
// `bridge` connects to a `serve` socket and forwards lines between it and stdin/stdout: the
// second hop of a stdio client reaching a pooled server the usual way (no descriptor passing).
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/buffer.h"

namespace bench {
namespace {

constexpr std::size_t kReadChunk = 256 * 1024;
// Lines (or pieces of a line) at least this long are written straight from the input buffer.
constexpr std::size_t kDirectWrite = 64 * 1024;
// The child is not read while the connection its current line goes to has this much queued,
// and is read again once that is under kResumeBytes.
constexpr std::size_t kPauseBytes = 1024 * 1024;
constexpr std::size_t kResumeBytes = 256 * 1024;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "bench-relay: %s: %s\n", what.c_str(), std::strerror(errno));
    std::exit(1);
}

void set_nonblocking(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) die("fcntl");
}

// One side of a hop: where lines come from (in) and go to (out); the same fd for a socket.
struct Port {
    std::uint64_t id = 0;
    int in = -1;
    int out = -1;
    Buffer input;
    std::size_t scanned = 0;  // bytes of input already searched for '\n'
    Buffer output;
    bool writing = false;  // EPOLLOUT registered
    bool closed = false;
};

class Loop {
public:
    Loop() : epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
        if (epoll_ < 0) die("epoll_create1");
    }

    // Register a port's descriptors for reading (and later writing).
    void add(Port& port) {
        add_fd(port.in, EPOLLIN, tag(port, false));
        if (port.out != port.in) add_fd(port.out, 0, tag(port, true));
    }
    // Stop watching a port's input (its output, a different descriptor, stays watched).
    void stop_reading(Port& port) { ::epoll_ctl(epoll_, EPOLL_CTL_DEL, port.in, nullptr); }
    // Pause or resume reading a port whose input has a descriptor of its own.
    void pause_reading(Port& port, bool pause) {
        epoll_event ev{};
        ev.events = pause ? 0U : std::uint32_t{EPOLLIN};
        ev.data.u64 = tag(port, false);
        ::epoll_ctl(epoll_, EPOLL_CTL_MOD, port.in, &ev);
    }

    // Read what `port` has and hand every piece of it to `on_bytes` at once: a line is
    // forwarded as it arrives, never gathered whole. Returns false at end of input.
    template <typename OnBytes>
    bool read_stream(Port& port, OnBytes&& on_bytes) {
        for (;;) {
            const ssize_t n = ::read(port.in, port.input.tail(kReadChunk), kReadChunk);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) return true;
            if (n <= 0) return false;
            port.input.commit(static_cast<std::size_t>(n));
            on_bytes(port.input.view());
            port.input.consume(port.input.size());
            if (static_cast<std::size_t>(n) < kReadChunk) return true;
        }
    }
    void remove(Port& port) {
        ::epoll_ctl(epoll_, EPOLL_CTL_DEL, port.in, nullptr);
        if (port.out != port.in) ::epoll_ctl(epoll_, EPOLL_CTL_DEL, port.out, nullptr);
    }

    // Queue `line` (with its '\n') for `port`. Lines queued while handling one batch of events
    // go out together in one write (flush_queued); a large line is written at once from where
    // it was read, saving a copy.
    void send(Port& port, std::string_view line) {
        if (port.closed) return;
        if (line.size() >= kDirectWrite) {
            if (!flush(port)) {
                port.closed = true;
                return;
            }
            if (port.output.empty()) {
                const ssize_t n = ::write(port.out, line.data(), line.size());
                if (n > 0) line.remove_prefix(static_cast<std::size_t>(n));
                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                    port.closed = true;
                    return;
                }
                if (line.empty()) return;
            }
        }
        if (port.output.empty() && !port.writing) queued_.push_back(&port);
        port.output.append(line);
    }

    // Write what was queued during the last batch of events.
    void flush_queued() {
        for (Port* port : queued_) {
            if (!port->writing && !flush(*port)) port->closed = true;
        }
        queued_.clear();
    }

    // Forget `port` (it is about to be destroyed).
    void forget(Port& port) { std::erase(queued_, &port); }

    // Write what is queued for `port`; false when its descriptor is gone.
    bool flush(Port& port) {
        while (!port.output.empty()) {
            const std::string_view rest = port.output.view();
            const ssize_t n = ::write(port.out, rest.data(), rest.size());
            if (n > 0) {
                port.output.consume(static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) {
                want_write(port, true);
                return true;
            }
            return false;
        }
        want_write(port, false);
        return true;
    }

    // Read what `port` has; calls `on_line` for each complete line (with its '\n'). Returns
    // false at end of input or on an error.
    template <typename OnLine>
    bool read_lines(Port& port, OnLine&& on_line) {
        for (;;) {
            const ssize_t n = ::read(port.in, port.input.tail(kReadChunk), kReadChunk);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) return true;
            if (n <= 0) return false;
            port.input.commit(static_cast<std::size_t>(n));
            std::size_t start = 0;
            const std::string_view all = port.input.view();
            for (;;) {
                const void* found =
                    std::memchr(all.data() + port.scanned, '\n', all.size() - port.scanned);
                if (found == nullptr) break;
                const auto end =
                    static_cast<std::size_t>(static_cast<const char*>(found) - all.data()) + 1;
                on_line(all.substr(start, end - start));
                start = end;
                port.scanned = end;
            }
            port.input.consume(start);
            port.scanned = port.input.size();
            if (static_cast<std::size_t>(n) < kReadChunk) return true;
        }
    }

    // Wait for events; `handle(port, writable_side, events)` for each.
    template <typename Handle>
    void wait(Handle&& handle) {
        epoll_event events[64];
        const int n = ::epoll_wait(epoll_, events, 64, -1);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int i = 0; i < n; ++i) {
            const std::uint64_t data = events[i].data.u64;
            handle(*reinterpret_cast<Port*>(data & ~std::uint64_t{1}), (data & 1) != 0,
                   events[i].events);
        }
    }

private:
    static std::uint64_t tag(Port& port, bool write_side) {
        return reinterpret_cast<std::uint64_t>(&port) | (write_side ? 1 : 0);
    }

    void add_fd(int fd, std::uint32_t events, std::uint64_t data) {
        epoll_event ev{};
        ev.events = events;
        ev.data.u64 = data;
        if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl");
    }

    void want_write(Port& port, bool on) {
        if (port.writing == on) return;
        port.writing = on;
        epoll_event ev{};
        const bool shared = port.out == port.in;
        ev.events = (on ? std::uint32_t{EPOLLOUT} : 0U) | (shared ? std::uint32_t{EPOLLIN} : 0U);
        ev.data.u64 = tag(port, !shared);
        ::epoll_ctl(epoll_, EPOLL_CTL_MOD, port.out, &ev);
    }

    int epoll_;
    std::vector<Port*> queued_;  // ports with output queued since the last flush_queued()
};

int connect_socket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) die("socket path too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0) {
        die("connect " + path);
    }
    return fd;
}

int listen_socket(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) die("socket path too long");
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    ::unlink(path.c_str());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) die("socket");
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0) die("bind " + path);
    if (::listen(fd, 1024) < 0) die("listen");
    return fd;
}

// Start argv on pipes: its stdin is `*to_child`, its stdout `*from_child`.
pid_t spawn(char** argv, int* to_child, int* from_child) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) < 0 || ::pipe2(out, O_CLOEXEC) < 0) die("pipe2");
    const pid_t pid = ::fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        ::dup2(in[0], STDIN_FILENO);
        ::dup2(out[1], STDOUT_FILENO);
        ::signal(SIGPIPE, SIG_DFL);
        ::execvp(argv[0], argv);
        std::fprintf(stderr, "bench-relay: cannot run %s: %s\n", argv[0], std::strerror(errno));
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    *to_child = in[1];
    *from_child = out[0];
    return pid;
}

// Blocking: write all of `text`, then read one line back (discarded).
void handshake(int to_child, int from_child) {
    const std::string init =
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
        R"("capabilities":{},"clientInfo":{"name":"bench-relay","version":"1"}}})"
        "\n";
    const std::string initialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                                    "\n";
    if (::write(to_child, init.data(), init.size()) != static_cast<ssize_t>(init.size())) {
        die("write initialize");
    }
    for (char c = 0; c != '\n';) {
        if (::read(from_child, &c, 1) != 1) die("read the initialize result");
    }
    if (::write(to_child, initialized.data(), initialized.size()) !=
        static_cast<ssize_t>(initialized.size())) {
        die("write notifications/initialized");
    }
}

int serve(const std::string& socket_path, bool init, char** command) {
    Port child;
    const pid_t pid = spawn(command, &child.out, &child.in);
    if (init) handshake(child.out, child.in);
    set_nonblocking(child.in);
    set_nonblocking(child.out);

    Loop loop;
    loop.add(child);
    Port listener;
    listener.in = listener.out = listen_socket(socket_path);
    loop.add(listener);

    std::unordered_map<std::uint64_t, std::unique_ptr<Port>> clients;
    std::deque<std::uint64_t> waiting;  // who sent each line the child has not answered yet
    std::uint64_t next_id = 1;
    std::vector<std::uint64_t> closing;
    bool in_line = false;       // a line from the child is being forwarded
    std::uint64_t line_to = 0;  // to this connection (0: nobody)
    bool child_paused = false;

    for (bool running = true; running;) {
        loop.wait([&](Port& port, bool write_side, std::uint32_t events) {
            if (&port == &listener) {
                for (;;) {
                    const int fd =
                        ::accept4(listener.in, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (fd < 0) break;
                    auto client = std::make_unique<Port>();
                    client->id = next_id++;
                    client->in = client->out = fd;
                    loop.add(*client);
                    clients.emplace(client->id, std::move(client));
                }
                return;
            }
            if (&port == &child) {
                if (write_side || (events & EPOLLOUT) != 0) {
                    if (!loop.flush(child)) running = false;
                    if (write_side) return;
                }
                const bool open = loop.read_stream(child, [&](std::string_view bytes) {
                    while (!bytes.empty()) {
                        if (!in_line) {  // a new line: it answers the oldest line not answered
                            in_line = true;
                            line_to = 0;
                            if (!waiting.empty()) {
                                line_to = waiting.front();
                                waiting.pop_front();
                            }
                        }
                        const void* nl = std::memchr(bytes.data(), '\n', bytes.size());
                        const std::size_t piece =
                            nl == nullptr ? bytes.size()
                                          : static_cast<std::size_t>(static_cast<const char*>(nl) -
                                                                     bytes.data()) +
                                                1;
                        const auto it = clients.find(line_to);
                        if (it != clients.end()) loop.send(*it->second, bytes.substr(0, piece));
                        if (nl != nullptr) in_line = false;
                        bytes.remove_prefix(piece);
                    }
                });
                if (!open) running = false;
                // Back-pressure: a connection that is behind holds up the child's output.
                const auto target = clients.find(line_to);
                if (open && target != clients.end() &&
                    target->second->output.size() > kPauseBytes) {
                    loop.pause_reading(child, true);
                    child_paused = true;
                }
                return;
            }
            if ((events & EPOLLOUT) != 0 && !loop.flush(port)) port.closed = true;
            if (child_paused && (port.id == line_to || port.closed) &&
                port.output.size() < kResumeBytes) {
                loop.pause_reading(child, false);
                child_paused = false;
            }
            if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) {
                const bool open = loop.read_lines(port, [&](std::string_view line) {
                    waiting.push_back(port.id);
                    loop.send(child, line);
                });
                if (!open) port.closed = true;
            }
            if (port.closed) closing.push_back(port.id);
        });
        loop.flush_queued();
        for (const std::uint64_t id : closing) {
            const auto it = clients.find(id);
            if (it == clients.end()) continue;
            loop.forget(*it->second);
            loop.remove(*it->second);
            ::close(it->second->in);
            clients.erase(it);
        }
        closing.clear();
    }
    ::close(child.out);
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
    ::unlink(socket_path.c_str());
    return 0;
}

int bridge(const std::string& socket_path) {
    Port local;
    local.in = STDIN_FILENO;
    local.out = STDOUT_FILENO;
    Port remote;
    remote.in = remote.out = connect_socket(socket_path);
    for (const int fd : {local.in, local.out, remote.in}) set_nonblocking(fd);
    Loop loop;
    loop.add(local);
    loop.add(remote);
    bool local_open = true;
    bool shut = false;
    for (bool running = true; running;) {
        loop.wait([&](Port& port, bool write_side, std::uint32_t events) {
            Port& other = &port == &local ? remote : local;
            if (write_side || (events & EPOLLOUT) != 0) {
                if (!loop.flush(port)) running = false;
                if (write_side) return;
            }
            if (&port == &local && !local_open) return;
            const bool open =
                loop.read_lines(port, [&](std::string_view line) { loop.send(other, line); });
            if (open) return;
            if (&port == &remote) {
                running = false;
            } else {
                // The client is done: pass the end on, keep delivering what is still coming.
                local_open = false;
                loop.stop_reading(local);
            }
        });
        loop.flush_queued();
        if (!local_open && !shut && remote.output.empty()) {
            ::shutdown(remote.in, SHUT_WR);
            shut = true;
        }
    }
    loop.flush(local);
    return 0;
}

int usage() {
    std::fputs(
        "usage: bench-relay serve --socket PATH [--init] -- COMMAND [ARGS...]\n"
        "       bench-relay bridge --socket PATH\n",
        stderr);
    return 2;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
    ::signal(SIGPIPE, SIG_IGN);
    if (argc < 4) return bench::usage();
    const std::string mode = argv[1];
    if (std::string_view(argv[2]) != "--socket") return bench::usage();
    const std::string socket_path = argv[3];
    if (mode == "bridge" && argc == 4) return bench::bridge(socket_path);
    if (mode != "serve") return bench::usage();
    int i = 4;
    bool init = false;
    if (i < argc && std::string_view(argv[i]) == "--init") {
        init = true;
        ++i;
    }
    if (i >= argc || std::string_view(argv[i]) != "--") return bench::usage();
    ++i;
    if (i >= argc) return bench::usage();
    return bench::serve(socket_path, init, argv + i);
}
