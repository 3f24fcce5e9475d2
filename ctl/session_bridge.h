// `mcpctl connect`: attach to a server and carry one MCP session for an agent, either by
// handing the agent's pipes to mcpd or by copying bytes between them and the socket.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "ctl/endpoint.h"

namespace mcpctl {

enum class Transport {
    pass_fds,  // send the agent's pipes to mcpd (SCM_RIGHTS) and only wait for the end
    copy,      // copy bytes between the agent's pipes and the socket
};

// The agent's side of the session: mcpctl's stdin and stdout in the real program.
struct AgentEnds {
    int input;   // the agent's MCP messages come from here
    int output;  // the server's go there; nothing else is ever written to it
};

// {"protocol": 1, "command": "attach", "server": NAME} ("servers": [NAMES] for several: one
// session over all of them) with "pass_fds": true when asked, and "cwd" when `cwd` is given
// (the directory of a sharing = "project" server's project).
nlohmann::json attach_request(const std::vector<std::string>& servers, bool pass_fds,
                              const std::string& cwd = {});

// mcpctl's working directory, for a local daemon; empty when it cannot be read (removed).
std::string working_directory();

// The exit status for an {"ended": {"reason", "status"}} message: 0 when the agent ended the
// session (status 0), 1 for anything else.
int ended_exit_code(const nlohmann::json& message);

// Attach to `servers` (one server or group, or several as one session) at `endpoint` (always copying when it is remote) and carry the session until it ends;
// returns mcpctl's exit status (see `mcpctl connect --help`). Errors are "mcpctl: ..." lines on
// `err`. With pass_fds, once mcpd has the descriptors, `ends.input` and `ends.output` are
// pointed at /dev/null: this process keeps no reference to the agent's pipes. Falls back to
// copying when mcpd does not ask for the descriptors (no "send_fds": true in its reply).
//
// `wait_helper`, when not empty, is the path of mcpctl-wait: once the descriptors are passed,
// this process execs it to do the waiting with a fraction of the memory (waiting here when the
// exec fails). Empty in tests, which must not be replaced by another program.
int bridge_session(const Endpoint& endpoint, const std::vector<std::string>& servers,
                   Transport transport,
                   AgentEnds ends, std::ostream& err, const std::string& wait_helper = {});

// Where mcpctl-wait is, next to this program or in ../libexec/mcpd/; empty when absent.
std::string find_wait_helper();

}  // namespace mcpctl
