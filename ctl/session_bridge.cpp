#include "ctl/session_bridge.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <iterator>

#include "common/control_protocol.h"
#include "common/fd_passing.h"
#include "common/terminal_text.h"
#include "ctl/byte_relay.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"
#include "ctl/output.h"

namespace mcpctl {

namespace control = mcpd::control;

namespace {

// Report a failure on our side of the socket and return its exit code.
int client_failure(Output& output, const DaemonClient& client) {
    output.client_error(client.error());
    return client.error().exit_code;
}

// Send the attach request and read its reply. No timeout: mcpd may be starting the server
// (bounded by the server's own start_timeout), and the agent has its own patience.
bool attach(DaemonClient& client, const nlohmann::json& request, Output& output,
            nlohmann::json& result, int& exit_code) {
    control::Reply reply;
    if (!client.connect() || !client.call(request, reply, std::nullopt)) {
        exit_code = client_failure(output, client);
        return false;
    }
    if (!reply.ok) {
        output.daemon_error(reply.error);
        exit_code = kExitError;
        return false;
    }
    result = std::move(reply.result);
    return true;
}

// Hand the agent's pipes to mcpd, then wait for the line that says how the session ended.
// Become mcpctl-wait, handing it the control connection. Returns only when exec failed.
void exec_wait_helper(DaemonClient& client, const std::string& helper) {
    // Bytes already read past the reply would be lost to the helper: wait here instead.
    std::string buffered = client.take_buffered();
    if (!buffered.empty()) {
        client.put_back(std::move(buffered));
        return;
    }
    const int fd = client.fd();
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0 || ::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0) return;
    const std::string fd_text = std::to_string(fd);
    std::cerr.flush();
    char* const argv[] = {const_cast<char*>(helper.c_str()), const_cast<char*>(fd_text.c_str()),
                          const_cast<char*>(client.where().c_str()), nullptr};
    ::execv(helper.c_str(), argv);
    ::fcntl(fd, F_SETFD, flags);
}

int carry_passed(DaemonClient& client, AgentEnds ends, Output& output,
                 const std::string& wait_helper) {
    const int fds[] = {ends.input, ends.output};
    static_assert(std::size(fds) == control::kPassedFds);
    const mcpd::Result<mcpd::Done> sent = mcpd::send_fds(client.fd(), fds, control::kFdsByte);
    if (!sent) {
        output.error(sent.error());
        return kExitError;
    }
    // Let go of the pipes now that mcpd holds its own references. The session's end is then
    // mcpd's alone to show: the agent reads EOF the moment mcpd closes its copy of the output
    // and gets EPIPE once mcpd closes the input, even while this process still waits here; and
    // nothing this process might print by mistake can reach the agent. /dev/null rather than
    // close() keeps the numbers taken, so no later descriptor lands on 0 or 1.
    mcpd::detach_fd(ends.input);
    mcpd::detach_fd(ends.output);
    if (!wait_helper.empty() && !client.remote()) exec_wait_helper(client, wait_helper);

    for (;;) {
        nlohmann::json message;
        switch (client.read(message, std::nullopt)) {
            case DaemonClient::Read::message:
                break;
            case DaemonClient::Read::closed:
                output.error("mcpd closed the connection without saying why the session ended (" +
                             client.where() + ")");
                return kExitError;
            case DaemonClient::Read::interrupted:
            case DaemonClient::Read::failed:
                output.client_error(client.error());
                return kExitError;
        }
        const std::optional<control::Ended> ended = control::parse_ended(message);
        if (!ended) continue;  // nothing else is defined
        if (ended->by_client) return kExitOk;
        output.error("the session ended: " + (ended->reason.empty()
                                                  ? std::string("-")
                                                  : mcpd::escape_controls(ended->reason)));
        return kExitError;
    }
}

// Copy bytes both ways, starting with whatever mcpd sent right after its reply line.
int carry_copied(DaemonClient& client, AgentEnds ends, Output& output) {
    const std::string already_read = client.take_buffered();
    const mcpd::Result<mcpd::Done> relayed =
        relay_bytes({ends.input, ends.output, client.fd()}, already_read);
    if (relayed) return kExitOk;
    output.error(relayed.error());
    return kExitError;
}

}  // namespace

nlohmann::json attach_request(const std::vector<std::string>& servers, bool pass_fds,
                              const std::string& cwd) {
    control::AttachRequest request;
    if (servers.size() == 1) {
        request.server = servers.front();
    } else {
        request.servers = servers;
    }
    request.pass_fds = pass_fds;
    request.cwd = cwd;
    return control::to_json(request);
}

std::string working_directory() {
    std::error_code error;
    const std::filesystem::path here = std::filesystem::current_path(error);
    return error ? std::string() : here.string();
}

int ended_exit_code(const nlohmann::json& message) {
    const std::optional<control::Ended> ended = control::parse_ended(message);
    return ended && ended->by_client ? kExitOk : kExitError;
}

std::string find_wait_helper() {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return {};
    const std::filesystem::path dir = self.parent_path();
    for (const auto& candidate :
         {dir / "mcpctl-wait", dir / ".." / "libexec" / "mcpd" / "mcpctl-wait"}) {
        if (::access(candidate.c_str(), X_OK) == 0) return candidate.lexically_normal().string();
    }
    return {};
}

int bridge_session(const Endpoint& endpoint, const std::vector<std::string>& servers,
                   Transport transport,
                   AgentEnds ends, std::ostream& err, const std::string& wait_helper) {
    // Errors only, and only on stderr: the agent owns stdout, even in --json mode.
    Output output(err, err, /*json=*/false);
    DaemonClient client(endpoint);
    // Descriptors cannot cross ssh: a remote session is always copied.
    const bool pass = transport == Transport::pass_fds && !endpoint.remote();
    nlohmann::json result;
    int exit_code = kExitOk;
    // A directory here means nothing to a daemon on another machine.
    const std::string cwd = endpoint.remote() ? std::string() : working_directory();
    if (!attach(client, attach_request(servers, pass, cwd), output, result, exit_code))
        return exit_code;

    if (pass && control::asks_for_fds(result))
        return carry_passed(client, ends, output, wait_helper);
    return carry_copied(client, ends, output);
}

}  // namespace mcpctl
