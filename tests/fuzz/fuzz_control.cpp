// Fuzz target: control requests as the daemon reads them (daemon/control_connection,
// daemon/control_commands, common/control_protocol).
//
// The first byte picks the peer (the daemon's own user, a user one server allows, a user no
// server allows); the rest is what a client writes on the control socket, or, when the first
// byte's top bit is set, decisions that build requests with fields of every JSON type. A real
// daemon (never run; its registry re-read once) answers through a real ControlConnection and the
// real command table, on one end of a socket pair. Its servers' command does not exist, so
// a start fails before any fork. An attach turns the rest of the bytes into an MCP session.
//
// Invariants: no crash and no exception out of a handler (in mcpd it would end the daemon);
// everything the client gets back is complete lines, each a JSON object; the daemon hangs
// up once the client has finished sending.
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/log.h"
#include "common/unique_fd.h"
#include "daemon/control/control_connection.h"
#include "daemon/control_commands.h"
#include "daemon/daemon.h"
#include "fuzz_input.h"

namespace {

using namespace mcpd;
namespace fs = std::filesystem;

constexpr int kMaxTurns = 2000;
constexpr int kIdleWaitMicros = 2000;
constexpr uid_t kAllowedUid = 4242;
constexpr uid_t kStrangerUid = 4343;

constexpr std::string_view kRegistry = R"([daemon]
log_level = "error"

[servers.alpha]
command = "/nonexistent/mcpd-fuzz/server"
autostart = false
start_timeout = "1ms"
allow_users = ["4242"]
request_timeout = "1s"

[servers.beta]
command = "/nonexistent/mcpd-fuzz/server"
autostart = false
start_timeout = "1ms"
sharing = "exclusive"

[servers.gamma]
command = "/nonexistent/mcpd-fuzz/server"
autostart = false
start_timeout = "1ms"
sharing = "serialized"
max_sessions = 1
)";

void quiet(log::Level, std::string_view, std::string_view) {}

// A private directory holding the registry, removed when the process ends.
class Scratch {
public:
    Scratch() {
        std::string pattern = (fs::temp_directory_path() / "mcpd-fuzz-control-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr)
            fuzz::fail(__FILE__, __LINE__, "cannot make a temp dir");
        dir_ = pattern;
        // MCPD_FUZZ_TRACE=1 keeps the daemon's log, to follow a failing input.
        const bool trace = std::getenv("MCPD_FUZZ_TRACE") != nullptr;
        std::string registry(kRegistry);
        if (trace) registry.replace(registry.find("\"error\""), 7, "\"debug\"");
        std::ofstream(dir_ / "mcpd.toml") << registry;
        ::signal(SIGPIPE, SIG_IGN);
        ::unsetenv("NOTIFY_SOCKET");
        if (!trace) log::set_sink(&quiet);
    }
    ~Scratch() {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }
    std::string registry() const { return (dir_ / "mcpd.toml").string(); }
    std::string socket() const { return (dir_ / "unused.sock").string(); }

private:
    fs::path dir_;
};

// Every complete line is a JSON object, and nothing is left half written.
void check_output(const std::string& received) {
    std::size_t start = 0;
    while (start < received.size()) {
        const std::size_t end = received.find('\n', start);
        FUZZ_CHECK(end != std::string::npos,
                   "the daemon left a line unfinished: " + received.substr(start));
        const std::string_view line(received.data() + start, end - start);
        const nlohmann::json message = nlohmann::json::parse(line, nullptr, false);
        FUZZ_CHECK(message.is_object(),
                   "the daemon wrote a line that is not a JSON object: " + std::string(line));
        start = end + 1;
    }
}

// Write the request bytes, run the loop, collect the answers, until the daemon hangs up. When
// nothing moves, the loop waits a little for timers (start_timeout is 1ms here).
std::string converse(EventLoop& loop, int client, std::string_view request, bool& hung_up) {
    std::string received;
    std::size_t written = 0;
    bool shut = false;
    int idle = 0;
    hung_up = false;
    for (int turn = 0; turn < kMaxTurns && !hung_up; ++turn) {
        bool moved = false;
        if (written < request.size()) {
            const ssize_t n =
                ::send(client, request.data() + written, request.size() - written, MSG_NOSIGNAL);
            if (n > 0) written += static_cast<std::size_t>(n);
            moved = n > 0;
        } else if (!shut) {
            ::shutdown(client, SHUT_WR);
            shut = moved = true;
        }
        if (!moved && ++idle % 8 == 0) {
            const timeval pause{0, kIdleWaitMicros};
            event_base_loopexit(loop.base(), &pause);
            event_base_loop(loop.base(), 0);
        } else {
            event_base_loop(loop.base(), EVLOOP_NONBLOCK);
        }
        char buffer[65536];
        for (;;) {
            const ssize_t n = ::recv(client, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n > 0) {
                received.append(buffer, static_cast<std::size_t>(n));
                idle = 0;
                continue;
            }
            // A reset counts as hanging up too (the daemon may close with input unread).
            if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
                hung_up = true;
            break;
        }
    }
    return received;
}

// Requests whose every field may hold a value of any JSON type, decided by the input: byte
// mutations of text alone rarely turn `"follow":true` into `"follow":"x"`.
std::string typed_requests(fuzz::FuzzInput& in) {
    constexpr const char* kCommands[] = {"version",  "status",   "start", "stop",
                                         "restart",  "reload",   "logs",  "attach",
                                         "sessions", "shutdown", "nosuch"};
    struct Field {
        const char* key;
        const char* usual;
    };
    constexpr Field kFields[] = {{"server", R"("alpha")"}, {"servers", R"(["alpha","beta"])"},
                                 {"wait", "true"},         {"timeout_ms", "1"},
                                 {"lines", "3"},           {"follow", "true"},
                                 {"pass_fds", "false"},    {"cwd", R"("/tmp")"}};
    std::string out;
    const std::size_t count = 1 + in.below(6);
    for (std::size_t i = 0; i < count && !in.empty(); ++i) {
        const std::uint8_t odd = in.byte();
        std::string line = std::string(R"({"protocol":)") +
                           ((odd & 1) != 0 ? std::string(in.pick(fuzz::kAnyJson)) : "1");
        const std::string command = (odd & 2) != 0 ? std::string(in.pick(fuzz::kAnyJson))
                                                   : "\"" + std::string(in.pick(kCommands)) + "\"";
        line += R"(,"command":)" + command;
        for (const Field& field : kFields) {
            const std::uint8_t choice = in.byte() % 4;  // absent, usual, any type, any type
            if (choice == 0) continue;
            const std::string value =
                choice == 1 ? std::string(field.usual) : in.pick(fuzz::kAnyJson);
            line += std::string(",\"") + field.key + "\":" + value;
        }
        out += line + "}\n";
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const Scratch scratch;
    fuzz::FuzzInput in(data, size);
    const std::uint8_t who = in.byte();
    // The peer byte's top bit: the rest of the input chooses typed requests instead of being
    // the bytes the client writes (checked-in text inputs start with '0', '1' or '2').
    const std::string typed = (who & 0x80) != 0 ? typed_requests(in) : std::string();
    const std::string_view request =
        (who & 0x80) != 0 ? std::string_view(typed)
        : size > 0        ? std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1)
                          : std::string_view();
    const uid_t uids[] = {::getuid(), kAllowedUid, kStrangerUid};
    const PeerCredentials peer{::getpid(), uids[who % 3], ::getgid()};

    DaemonOptions options;
    options.config_path = scratch.registry();
    options.socket_path = scratch.socket();
    Daemon daemon(std::move(options), config::Registry{});
    FUZZ_CHECK(daemon.reload().errors.empty(), "the fuzz registry does not load");
    ControlCommands commands(daemon);
    int fds[2];
    FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) == 0,
               "no socketpair");
    const UniqueFd client(fds[1]);
    auto connection = std::make_unique<ControlConnection>(
        daemon.loop().base(), UniqueFd(fds[0]), peer, commands, daemon.output_budget(),
        daemon.registry().daemon.control_idle_timeout, [](ControlConnection&) {});
    bool hung_up = false;
    const std::string received = converse(daemon.loop(), client.get(), request, hung_up);
    check_output(received);
    FUZZ_CHECK(hung_up, "the daemon did not hang up after the client finished sending");
    // Deferred work (session detach, connection clean-up) runs before the daemon goes.
    for (int turn = 0; turn < 16; ++turn) event_base_loop(daemon.loop().base(), EVLOOP_NONBLOCK);
    connection.reset();
    return 0;
}
