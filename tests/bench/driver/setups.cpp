#include "setups.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace bench {
namespace {

using Json = nlohmann::json;

// Retry connecting until something accepts on `path` (a daemon starting up).
int connect_when_ready(const std::string& path, Child& owner, const std::string& log,
                       int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        try {
            return Channel::connect_unix(path);
        } catch (const std::exception& e) {
            if (!owner.running()) {
                throw std::runtime_error("it exited before listening; its log:\n" + read_text(log));
            }
            if (std::chrono::steady_clock::now() > deadline) throw;
        }
        sleep_ms(10);
    }
}

bool is_result(std::string_view line) {
    return line.find("\"result\"") != std::string_view::npos;
}

// Send the request line and wait for its reply (the only traffic on a benchmark session).
std::string_view round_trip(Session& s, const std::string& request) {
    s.channel->send(request);
    const std::string_view reply = s.channel->read_line();
    if (!is_result(reply)) {
        throw std::runtime_error("unexpected reply: " + std::string(reply.substr(0, 300)));
    }
    return reply;
}

// Send `fds` with one byte over the Unix socket `socket_fd` (SCM_RIGHTS).
void send_fds(int socket_fd, const int (&fds)[2]) {
    char byte = 'F';
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof fds);
    std::memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
    for (;;) {
        if (::sendmsg(socket_fd, &msg, MSG_NOSIGNAL) == 1) return;
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            sleep_ms(1);
            continue;
        }
        throw std::runtime_error(std::string("sendmsg: ") + std::strerror(errno));
    }
}

std::string attach_request(const std::string& server, bool pass_fds) {
    Json request = {{"protocol", 1}, {"command", "attach"}, {"server", server}};
    if (pass_fds) request["pass_fds"] = true;
    return request.dump();
}

void expect_ok(std::string_view reply, const std::string& what) {
    if (reply.find("\"ok\":true") == std::string_view::npos) {
        throw std::runtime_error(what + " refused: " + std::string(reply));
    }
}

}  // namespace

Binaries Binaries::in(const std::string& bin_dir) {
    return {bin_dir + "/mcpd", bin_dir + "/mcpctl", bin_dir + "/mcpd-demo-server",
            bin_dir + "/bench-relay"};
}

namespace mcp {

std::string initialize(std::string_view client_name) {
    return R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":)"
           R"("2025-06-18","capabilities":{},"clientInfo":{"name":")" +
           std::string(client_name) + R"(","version":"1"}}})";
}

std::string initialized() {
    return R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
}

std::string echo(std::uint64_t id, std::string_view text, std::string_view tool) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":")" + std::string(tool) +
           R"(","arguments":{"text":")" + std::string(text) + R"("}}})";
}

std::string large(std::uint64_t id, std::size_t bytes) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":"large","arguments":{"bytes":)" +
           std::to_string(bytes) + "}}}";
}

}  // namespace mcp

void Session::echo(std::string_view text) {
    round_trip(*this, mcp::echo(next_id++, text, echo_tool));
}

std::size_t Session::large(std::size_t bytes) {
    return round_trip(*this, mcp::large(next_id++, bytes)).size();
}

void initialize(Session& session, std::string_view client_name) {
    round_trip(session, mcp::initialize(client_name));
    session.channel->send(mcp::initialized());
}

std::vector<std::string> demo_argv(const Binaries& bin) {
    return {bin.demo, "--tick-ms=0"};
}

Direct::Direct(const Binaries& bin, const TempDir& dir) {
    child_ =
        std::make_unique<Child>(demo_argv(bin), Child::Options{true, dir.file("direct.log"), {}});
    session_.channel = std::make_unique<Channel>(child_->take_stdout(), child_->take_stdin());
    initialize(session_, "bench-direct");
}

Relay::Relay(const Binaries& bin, const TempDir& dir, const std::string& name)
    : bin_(bin), socket_(dir.file(name + ".sock")), log_(dir.file(name + ".log")) {
    std::vector<std::string> argv = {bin.relay, "serve", "--socket", socket_, "--init", "--"};
    for (const std::string& arg : demo_argv(bin)) argv.push_back(arg);
    relay_ = std::make_unique<Child>(argv, Child::Options{false, log_, {}});
    ::close(connect_when_ready(socket_, *relay_, log_, 10000));
}

pid_t Relay::server_pid() const {
    // The relay's only child.
    const std::string children = read_text("/proc/" + std::to_string(relay_->pid()) + "/task/" +
                                           std::to_string(relay_->pid()) + "/children");
    return static_cast<pid_t>(std::strtol(children.c_str(), nullptr, 10));
}

Session Relay::connect() {
    Session s;
    const int fd = Channel::connect_unix(socket_);
    s.channel = std::make_unique<Channel>(fd, fd);
    return s;
}

Session Relay::bridge() {
    Session s;
    s.process =
        std::make_unique<Child>(std::vector<std::string>{bin_.relay, "bridge", "--socket", socket_},
                                Child::Options{true, log_, {}});
    s.channel = std::make_unique<Channel>(s.process->take_stdout(), s.process->take_stdin());
    return s;
}

Mcpd::Mcpd(const Binaries& bin, const TempDir& dir, const std::string& name,
           const McpdOptions& options)
    : bin_(bin), socket_(dir.file(name + ".sock")), log_(dir.file(name + ".log")) {
    // The scale and throughput figures attach up to 512 sessions beside their control
    // connections: more than the owner's default cap.
    std::string registry = "[daemon]\nlog_level = \"warning\"\nmax_owner_connections = 8192\n";
    if (options.max_message_bytes != 0) {
        registry += "max_message_bytes = " + std::to_string(options.max_message_bytes) + "\n";
        registry += "max_session_queue_bytes = " + std::to_string(options.max_message_bytes) + "\n";
        // mcpd refuses a total smaller than one session's share.
        registry += "max_queued_output = " +
                    std::to_string(std::max<std::uint64_t>(options.max_message_bytes, 64ull << 20)) +
                    "\n";
    }
    for (int i = 1; i <= options.servers; ++i) {
        registry += "\n[servers." + std::string(i == 1 ? "demo" : "demo" + std::to_string(i)) +
                    "]\ncommand = " + Json(bin.demo).dump() + "\nargs = [\"--tick-ms=0\"]\n" +
                    "restart = \"never\"\nhealth_interval = \"0s\"\nera = \"legacy\"\n" +
                    "start_timeout = \"" + std::to_string(options.start_timeout_ms) + "ms\"\n" +
                    options.server_toml + (options.server_toml.empty() ? "" : "\n");
    }
    if (options.pair_group) registry += "\n[groups.pair]\nservers = [\"demo\", \"demo2\"]\n";
    const std::string registry_path = dir.file(name + ".toml");
    write_text(registry_path, registry);
    std::vector<std::string> argv = options.prefix;
    for (const std::string& arg :
         std::vector<std::string>{bin.mcpd, "--config", registry_path, "--socket", socket_}) {
        argv.push_back(arg);
    }
    mcpd_ = std::make_unique<Child>(argv, Child::Options{false, log_, {}});
    ::close(connect_when_ready(socket_, *mcpd_, log_, options.start_timeout_ms));
}

std::string Mcpd::control(const std::string& request) {
    const int fd = Channel::connect_unix(socket_);
    Channel channel(fd, fd);
    channel.send(request);
    return std::string(channel.read_line());
}

pid_t Mcpd::server_pid(const std::string& server) {
    const Json reply = Json::parse(
        control(Json{{"protocol", 1}, {"command", "status"}, {"servers", {server}}}.dump()));
    const Json& pid = reply["result"]["servers"][0]["pid"];
    return pid.is_number() ? pid.get<pid_t>() : 0;
}

Json Mcpd::request(const Json& request) {
    const Json reply = Json::parse(control(request.dump()));
    if (!reply.value("ok", false)) throw std::runtime_error("mcpd refused " + request.dump() + ": " + reply.dump());
    return reply["result"];
}

int Mcpd::running_servers() {
    const Json reply = Json::parse(control(Json{{"protocol", 1}, {"command", "status"}}.dump()));
    int running = 0;
    for (const Json& s : reply["result"]["servers"]) running += s["state"] == "running";
    return running;
}

Session Mcpd::attach(const std::string& server) {
    Session s;
    const int fd = Channel::connect_unix(socket_);
    s.channel = std::make_unique<Channel>(fd, fd);
    s.channel->send(attach_request(server, false));
    expect_ok(s.channel->read_line(), "attach");
    initialize(s, "bench-attach");
    return s;
}

Session Mcpd::attach_fds(const std::string& server) {
    Session s;
    const int fd = Channel::connect_unix(socket_);
    s.control = std::make_unique<Channel>(fd, fd);
    s.control->send(attach_request(server, true));
    expect_ok(s.control->read_line(), "attach with pass_fds");
    int to_mcpd[2], from_mcpd[2];
    if (::pipe2(to_mcpd, O_CLOEXEC) < 0 || ::pipe2(from_mcpd, O_CLOEXEC) < 0) {
        throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    }
    const int passed[2] = {to_mcpd[0], from_mcpd[1]};
    send_fds(fd, passed);
    ::close(to_mcpd[0]);
    ::close(from_mcpd[1]);
    s.channel = std::make_unique<Channel>(from_mcpd[0], to_mcpd[1]);
    initialize(s, "bench-fds");
    return s;
}

Session Mcpd::connect(const std::string& server) {
    Session s;
    s.process = std::make_unique<Child>(
        std::vector<std::string>{bin_.mcpctl, "--socket", socket_, "connect", server},
        Child::Options{true, log_, {}});
    s.channel = std::make_unique<Channel>(s.process->take_stdout(), s.process->take_stdin());
    initialize(s, "bench-mcpctl");
    return s;
}

void Mcpd::stop(int grace_ms) {
    mcpd_->stop(grace_ms);
}

}  // namespace bench
