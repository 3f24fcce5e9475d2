// mcpctl connect against a scripted fake daemon: passing the agent's pipes (SCM_RIGHTS), copying
// bytes both ways, error replies, and nothing listening. The agent's pipes are real pipes handed
// to bridge_session in place of fds 0 and 1.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/control_protocol.h"
#include "common/unique_fd.h"
#include "ctl/command.h"
#include "ctl/session_bridge.h"
#include "run_mcpctl.h"
#include "temp_dir.h"

using mcpctl::AgentEnds;
using mcpctl::Transport;
using mcpd::UniqueFd;
using nlohmann::json;

namespace {

struct Pipe {
    UniqueFd read;
    UniqueFd write;
};

Pipe make_pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// Write all of `bytes` (blocking).
bool write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        const ssize_t m = n < 0 && errno == ENOTSOCK ? ::write(fd, bytes.data(), bytes.size()) : n;
        if (m <= 0) return false;
        bytes.remove_prefix(static_cast<std::size_t>(m));
    }
    return true;
}

// Read until `count` bytes arrived or end of file, waiting at most 5s for each read. `eof`
// says whether the end of file was seen.
std::string read_bytes(int fd, std::size_t count, bool* eof = nullptr) {
    std::string bytes;
    char chunk[4096];
    if (eof) *eof = false;
    while (bytes.size() < count) {
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 5000) != 1) break;
        const ssize_t n = ::read(fd, chunk, std::min(sizeof chunk, count - bytes.size()));
        if (n == 0 && eof) *eof = true;
        if (n <= 0) break;
        bytes.append(chunk, static_cast<std::size_t>(n));
    }
    return bytes;
}

// Everything until end of file; "(no EOF)" appended when it did not come within 5s.
std::string read_to_eof(int fd) {
    bool eof = false;
    std::string bytes = read_bytes(fd, std::string::npos, &eof);
    return eof ? bytes : bytes + "(no EOF)";
}

// One line without its '\n', read a byte at a time so nothing after it is consumed.
std::string read_line(int fd) {
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
    return line;
}

// Accepts one connection on a private socket and runs `script` on it in a thread. Catch2's
// assertions are not thread-safe: scripts record what they saw, and the test checks it after
// join().
class FakeDaemon {
public:
    using Script = std::function<void(int connection)>;

    FakeDaemon(const TempDir& dir, Script script) : path_(dir.path("d.sock")) {
        listener_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        REQUIRE(listener_);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        path_.copy(addr.sun_path, sizeof addr.sun_path - 1);
        REQUIRE(::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) ==
                0);
        REQUIRE(::listen(listener_.get(), 4) == 0);
        thread_ = std::thread([this, script = std::move(script)] {
            pollfd pfd{listener_.get(), POLLIN, 0};
            if (::poll(&pfd, 1, 5000) != 1) return;
            const UniqueFd connection(::accept(listener_.get(), nullptr, nullptr));
            request = read_line(connection.get());
            script(connection.get());
        });
    }
    ~FakeDaemon() { join(); }

    void join() {
        if (thread_.joinable()) thread_.join();
    }
    const std::string& path() const { return path_; }

    std::string request;  // the request line mcpctl sent; read it after join()

private:
    std::string path_;
    UniqueFd listener_;
    std::thread thread_;
};

// One byte and the descriptors that came with it.
struct Received {
    ssize_t bytes = -1;
    char byte = 0;
    std::vector<int> fds;
};

Received receive_fds(int connection) {
    Received received;
    char byte = 0;
    iovec data{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msghdr message{};
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof control;
    received.bytes = ::recvmsg(connection, &message, MSG_CMSG_CLOEXEC);
    received.byte = byte;
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header;
         header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
            received.fds.push_back(fd);
        }
    }
    return received;
}

const std::string kAttachedWithFds =
    R"({"ok": true, "result": {"server": "demo", "session": 7, "send_fds": true}})"
    "\n";
const std::string kAttached = R"({"ok": true, "result": {"server": "demo", "session": 7}})"
                              "\n";

// The agent's two pipes: it writes requests into `to_client`, reads answers from `from_client`.
struct Agent {
    Pipe to_client = make_pipe();
    Pipe from_client = make_pipe();

    AgentEnds ends() const { return {to_client.read.get(), from_client.write.get()}; }
};

struct Bridged {
    int exit_code;
    std::string err;
};

Bridged bridge(const std::string& socket, Transport transport, const Agent& agent) {
    std::ostringstream err;
    const int code = mcpctl::bridge_session(mcpctl::Endpoint{socket, std::nullopt, {}}, {"demo"}, transport, agent.ends(), err);
    return {code, err.str()};
}

Bridged bridge(const FakeDaemon& daemon, Transport transport, const Agent& agent) {
    return bridge(daemon.path(), transport, agent);
}


bool is_dev_null(int fd) {
    struct stat fd_stat {};
    struct stat null_stat {};
    return ::fstat(fd, &fd_stat) == 0 && ::stat("/dev/null", &null_stat) == 0 &&
           S_ISCHR(fd_stat.st_mode) && fd_stat.st_rdev == null_stat.st_rdev;
}

// What the pass_fds script saw, for the test to check after join().
struct PassedFds {
    Received received;
    std::string agent_read;   // written by "mcpd" into the passed output, read by the agent
    std::string server_read;  // written by the agent, read by "mcpd" from the passed input
    std::string after_close;  // what the agent read once "mcpd" closed the passed output
};

// The pass_fds script: reply, take the descriptors, prove they are the agent's pipes, close
// them, then end the session with `ending` (or just close when it is empty).
FakeDaemon::Script pass_fds_script(const Agent& agent, PassedFds& seen, std::string ending) {
    return [&agent, &seen, ending](int connection) {
        write_all(connection, kAttachedWithFds);
        seen.received = receive_fds(connection);
        if (seen.received.fds.size() == 2) {
            const UniqueFd input(seen.received.fds[0]);
            const UniqueFd output(seen.received.fds[1]);
            write_all(output.get(), "from server\n");
            seen.agent_read = read_bytes(agent.from_client.read.get(), 12);
            write_all(agent.to_client.write.get(), "from agent\n");
            seen.server_read = read_bytes(input.get(), 11);
        }
        // mcpctl let go of its copies: with ours closed, the agent sees EOF.
        seen.after_close = read_to_eof(agent.from_client.read.get());
        write_all(connection, ending);
    };
}

}  // namespace

TEST_CASE("connect passes the agent's pipes and exits 0 when the agent ended the session",
          "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    PassedFds seen;
    FakeDaemon daemon(dir, pass_fds_script(agent, seen,
                                           R"({"ended": {"reason": "x", "status": 0}})"
                                           "\n"));
    const Bridged bridged = bridge(daemon, Transport::pass_fds, agent);
    daemon.join();

    CHECK(bridged.exit_code == 0);
    CHECK(bridged.err.empty());
    // With its working directory: a sharing = "project" server's sessions are keyed by it.
    CHECK(json::parse(daemon.request) == json{{"protocol", mcpd::control::kProtocolVersion},
                                              {"command", "attach"},
                                              {"server", "demo"},
                                              {"pass_fds", true},
                                              {"cwd", mcpctl::working_directory()}});
    CHECK(seen.received.bytes == 1);
    CHECK(seen.received.byte == 'F');
    REQUIRE(seen.received.fds.size() == 2);
    // The first descriptor is the agent's input pipe, the second its output pipe.
    CHECK(seen.agent_read == "from server\n");
    CHECK(seen.server_read == "from agent\n");
    CHECK(seen.after_close.empty());
    // mcpctl's own copies now point at /dev/null.
    CHECK(is_dev_null(agent.ends().input));
    CHECK(is_dev_null(agent.ends().output));
}

TEST_CASE("connect with passed pipes exits 1 and says why when mcpd ended the session",
          "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    PassedFds seen;
    FakeDaemon daemon(dir, pass_fds_script(agent, seen,
                                           R"({"something": "else"})"
                                           "\n"
                                           R"({"ended": {"reason": "server removed", "status": 1}})"
                                           "\n"));
    const Bridged bridged = bridge(daemon, Transport::pass_fds, agent);
    daemon.join();
    CHECK(seen.received.fds.size() == 2);
    CHECK(bridged.exit_code == 1);
    CHECK(bridged.err == "mcpctl: the session ended: server removed\n");
}

TEST_CASE("connect with passed pipes: a close without an ended line is exit 1", "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    PassedFds seen;
    FakeDaemon daemon(dir, pass_fds_script(agent, seen, ""));
    const Bridged bridged = bridge(daemon, Transport::pass_fds, agent);
    daemon.join();
    CHECK(seen.received.fds.size() == 2);
    CHECK(bridged.exit_code == 1);
    CHECK(bridged.err.starts_with("mcpctl: mcpd closed the connection without saying why"));
}

TEST_CASE("connect asked to pass its pipes copies when mcpd does not want them", "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    std::string got;
    FakeDaemon daemon(dir, [&](int connection) {
        write_all(connection, kAttached);
        got = read_to_eof(connection);
    });
    write_all(agent.to_client.write.get(), "ping\n");
    agent.to_client.write.reset();
    const Bridged bridged = bridge(daemon, Transport::pass_fds, agent);
    daemon.join();
    CHECK(bridged.exit_code == 0);
    CHECK(got == "ping\n");
    CHECK(!is_dev_null(agent.ends().input));
}

TEST_CASE("connect --copy: bytes both ways, including those right after the reply line",
          "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    std::string got;
    // The reply and the server's first message in one write; then echo until the agent's EOF
    // arrives (mcpctl shut down its write side), then one last message after it.
    FakeDaemon daemon(dir, [&](int connection) {
        write_all(connection, kAttached + "early\n");
        got = read_to_eof(connection);
        write_all(connection, got + "after eof\n");
    });
    write_all(agent.to_client.write.get(), "request 1\nrequest 2\n");
    agent.to_client.write.reset();  // the agent is done: EOF on mcpctl's input

    const Bridged bridged = bridge(daemon, Transport::copy, agent);
    daemon.join();
    CHECK(bridged.exit_code == 0);
    CHECK(bridged.err.empty());
    CHECK(json::parse(daemon.request) == json{{"protocol", mcpd::control::kProtocolVersion},
                                              {"command", "attach"},
                                              {"server", "demo"},
                                              {"cwd", mcpctl::working_directory()}});
    CHECK(got == "request 1\nrequest 2\n");
    agent.from_client.write.reset();
    CHECK(read_to_eof(agent.from_client.read.get()) == "early\nrequest 1\nrequest 2\nafter eof\n");
}

TEST_CASE("connect --copy moves more than the pipes hold, both ways at once", "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    constexpr std::size_t kSize = 1024 * 1024;
    std::string payload(kSize, '\0');
    for (std::size_t i = 0; i < kSize; ++i) payload[i] = static_cast<char>('a' + i % 26);

    // Echo as it comes, so both directions are busy together.
    FakeDaemon daemon(dir, [&](int connection) {
        write_all(connection, kAttached);
        char chunk[8192];
        ssize_t n;
        while ((n = ::read(connection, chunk, sizeof chunk)) > 0)
            if (!write_all(connection, std::string_view(chunk, static_cast<std::size_t>(n))))
                return;
    });
    std::thread writer([&] {
        write_all(agent.to_client.write.get(), payload);
        agent.to_client.write.reset();
    });
    std::string echoed;
    std::thread reader([&] { echoed = read_bytes(agent.from_client.read.get(), kSize); });

    const Bridged bridged = bridge(daemon, Transport::copy, agent);
    writer.join();
    reader.join();
    daemon.join();
    CHECK(bridged.exit_code == 0);
    CHECK(echoed.size() == kSize);
    CHECK(echoed == payload);
}

TEST_CASE("connect --copy exits 0 when mcpd closes, even with the agent's input open",
          "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    FakeDaemon daemon(dir, [](int connection) { write_all(connection, kAttached + "last\n"); });
    const Bridged bridged = bridge(daemon, Transport::copy, agent);
    daemon.join();
    CHECK(bridged.exit_code == 0);
    CHECK(read_bytes(agent.from_client.read.get(), 5) == "last\n");
}

TEST_CASE("connect --copy exits 1 when the agent stopped reading its output", "[ctl][connect]") {
    ::signal(SIGPIPE, SIG_IGN);  // as mcpctl connect does
    const TempDir dir("mcpctl-connect");
    Agent agent;
    FakeDaemon daemon(dir, [](int connection) {
        write_all(connection, kAttached + "nobody reads this\n");
        read_to_eof(connection);
    });
    agent.from_client.read.reset();
    const Bridged bridged = bridge(daemon, Transport::copy, agent);
    daemon.join();
    CHECK(bridged.exit_code == 1);
    CHECK(bridged.err.starts_with("mcpctl: cannot write to standard output"));
}

TEST_CASE("connect: mcpd's refusals are exit 1 with the message on stderr, never stdout",
          "[ctl][connect]") {
    for (const char* code : {"not_found", "failed", "denied", "limit"}) {
        const TempDir dir("mcpctl-connect");
        const std::string message = std::string("refused: ") + code;
        FakeDaemon daemon(dir, [&](int connection) {
            write_all(
                connection,
                json{{"ok", false}, {"error", {{"code", code}, {"message", message}}}}.dump() +
                    "\n");
        });
        // --json changes nothing: stdout belongs to the agent.
        const Ran ran = run({"--json", "--socket", daemon.path(), "connect", "demo"});
        daemon.join();
        CHECK(ran.exit_code == 1);
        CHECK(ran.out.empty());
        CHECK(ran.err == "mcpctl: " + message + "\n");
        const json request = json::parse(daemon.request);
        CHECK(request["command"] == "attach");
        CHECK(request["server"] == "demo");
    }
}

TEST_CASE("connect: mcpd not running is exit 3 with the usual sentence", "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    const std::string socket = dir.path("none.sock");
    const Ran ran = run({"--socket", socket, "connect", "demo"});
    CHECK(ran.exit_code == 3);
    CHECK(ran.out.empty());
    CHECK(ran.err == "mcpctl: mcpd is not running (nothing listens on " + socket +
                         "). Start it with 'mcpd --config FILE' or 'systemctl --user start "
                         "mcpd'.\n");
    Agent agent;
    CHECK(bridge(socket, Transport::pass_fds, agent).exit_code == 3);
}

TEST_CASE("connect: a close before the reply is exit 1", "[ctl][connect]") {
    const TempDir dir("mcpctl-connect");
    Agent agent;
    FakeDaemon daemon(dir, [](int) {});
    const Bridged bridged = bridge(daemon, Transport::copy, agent);
    CHECK(bridged.exit_code == 1);
    CHECK(bridged.err.find("without answering") != std::string::npos);
}

TEST_CASE("connect: arguments, --copy and --help", "[ctl][connect]") {
    mcpctl::Invocation invocation;
    mcpctl::UsageError error;
    REQUIRE(mcpctl::parse_invocation({"connect", "--copy", "demo"}, invocation, error));
    CHECK(invocation.line.has("copy"));
    CHECK(invocation.request == json{{"protocol", mcpd::control::kProtocolVersion},
                                     {"command", "attach"},
                                     {"server", "demo"}});
    CHECK_FALSE(mcpctl::parse_invocation({"connect"}, invocation, error));
    CHECK(error.message == "'connect' needs a server NAME");
    // Several names: one session over all of them (an ad-hoc group).
    REQUIRE(mcpctl::parse_invocation({"connect", "a", "b"}, invocation, error));
    CHECK(invocation.request == json{{"protocol", mcpd::control::kProtocolVersion},
                                     {"command", "attach"},
                                     {"servers", {"a", "b"}}});

    const Ran help = run({"connect", "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.starts_with("usage: mcpctl connect [--copy] NAME...\n"));
    CHECK(help.out.find(R"({"command": "mcpctl", "args": ["connect", "NAME"]})") !=
          std::string::npos);
}

TEST_CASE("connect: the ended line's status becomes the exit status", "[ctl][connect]") {
    CHECK(mcpctl::ended_exit_code(json::parse(R"({"ended": {"reason": "x", "status": 0}})")) == 0);
    CHECK(mcpctl::ended_exit_code(json::parse(R"({"ended": {"reason": "x", "status": 1}})")) == 1);
    CHECK(mcpctl::ended_exit_code(json::parse(R"({"ended": {"reason": "x", "status": 7}})")) == 1);
    CHECK(mcpctl::ended_exit_code(json::parse(R"({"ended": {"reason": "x"}})")) == 1);
    CHECK(mcpctl::attach_request({"demo"}, true)["pass_fds"] == true);
    CHECK_FALSE(mcpctl::attach_request({"demo"}, false).contains("pass_fds"));
}
