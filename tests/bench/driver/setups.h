// The ways a client reaches mcpd-demo-server in the benchmarks: its own pipes (direct), the
// minimal relay (one hop on a socket, or two hops through a stdio bridge), and mcpd (an attach
// on the control socket, passed pipes, or `mcpctl connect`).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "channel.h"
#include "process.h"

namespace bench {

using Json = nlohmann::json;

struct Binaries {
    std::string mcpd, mcpctl, demo, relay;
    // From a build's bin directory.
    static Binaries in(const std::string& bin_dir);
};

// The few MCP messages the benchmarks send, as lines without '\n'.
namespace mcp {
std::string initialize(std::string_view client_name);
std::string initialized();
std::string echo(std::uint64_t id, std::string_view text, std::string_view tool = "echo");
std::string large(std::uint64_t id, std::size_t bytes);
}  // namespace mcp

// One client session, ready for tools/call requests.
struct Session {
    std::unique_ptr<Child> process;    // the stdio process in between (mcpctl, bridge), if any
    std::unique_ptr<Channel> control;  // a passed-pipes session's control connection
    std::unique_ptr<Channel> channel;
    std::uint64_t next_id = 1;
    std::string echo_tool = "echo";  // "demo__echo" through a group

    // One tools/call echo round trip; throws when the reply is not a result.
    void echo(std::string_view text);
    // One tools/call large round trip; returns the reply's length in bytes.
    std::size_t large(std::size_t bytes);
};

// The demo server's flags in every set-up: no timer, so nothing arrives unasked.
std::vector<std::string> demo_argv(const Binaries& bin);

class Direct {
public:
    Direct(const Binaries& bin, const TempDir& dir);
    pid_t server_pid() const { return child_->pid(); }
    Session& session() { return session_; }

private:
    std::unique_ptr<Child> child_;
    Session session_;
};

class Relay {
public:
    Relay(const Binaries& bin, const TempDir& dir, const std::string& name);
    pid_t pid() const { return relay_->pid(); }
    pid_t server_pid() const;
    // A connection to the relay's socket: one hop.
    Session connect();
    // A `bench-relay bridge` on pipes in front of it: two hops.
    Session bridge();

private:
    const Binaries& bin_;
    std::string socket_;
    std::string log_;
    std::unique_ptr<Child> relay_;
};

struct McpdOptions {
    int servers = 1;                      // named demo, demo2, demo3, ...
    std::uint64_t max_message_bytes = 0;  // 0: the default
    std::vector<std::string> prefix;      // run mcpd under this (valgrind ...)
    int start_timeout_ms = 30000;
    // A [groups.pair] of demo and demo2 (needs servers >= 2): one session over both.
    bool pair_group = false;
    // More lines of every server's table (`sandbox = "project"`, say).
    std::string server_toml;
};

class Mcpd {
public:
    Mcpd(const Binaries& bin, const TempDir& dir, const std::string& name,
         const McpdOptions& options = {});
    pid_t pid() const { return mcpd_->pid(); }
    // The pid of the server's process, from `status` (0 when it has none).
    pid_t server_pid(const std::string& server = "demo");
    // How many servers are running.
    int running_servers();
    // A control request on a fresh connection, as JSON; the reply's result (throws on an error).
    Json request(const Json& request);
    // Sessions, initialized (the server starts if it is not running).
    // An MCP session on the control socket.
    Session attach(const std::string& server = "demo");
    // A session on pipes we pass over the socket, as `mcpctl connect` does.
    Session attach_fds(const std::string& server = "demo");
    // `mcpctl connect SERVER` on pipes.
    Session connect(const std::string& server = "demo");
    // SIGTERM and wait for the exit (a daemon under valgrind takes a while).
    void stop(int grace_ms);
    const std::string& log_path() const { return log_; }

private:
    // One control request on a fresh connection; the reply line.
    std::string control(const std::string& request);

    const Binaries& bin_;
    std::string socket_;
    std::string log_;
    std::unique_ptr<Child> mcpd_;
};

// Send initialize and notifications/initialized on `session`.
void initialize(Session& session, std::string_view client_name);

}  // namespace bench
