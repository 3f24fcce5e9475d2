// mcpctl connect [--copy] NAME: the command an agent runs as its MCP server.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "ctl/command.h"
#include "ctl/output.h"
#include "ctl/session_bridge.h"

namespace mcpctl {

namespace {

constexpr OptionSpec kOptions[] = {
    {'\0', "copy", "", "copy the bytes through mcpctl instead of passing stdin/stdout to mcpd"},
};

bool build(const CommandLine& line, nlohmann::json& request, std::string&) {
    request = attach_request(line.args.at(0), /*pass_fds=*/false);
    return true;
}

// SIGINT, SIGTERM and SIGHUP end mcpctl at once (the kernel then closes the control connection,
// which tells mcpd to end the session), so they must not stay blocked. An inherited SIG_IGN on
// SIGINT or SIGHUP is kept: an agent (or nohup) that shields its children from ^C or a hangup
// means it. SIGPIPE is ignored so that a closed stdout is a write error, not a death.
void prepare_signals() {
    sigset_t ending;
    sigemptyset(&ending);
    for (const int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&ending, signal);
    sigprocmask(SIG_UNBLOCK, &ending, nullptr);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_IGN);
}

bool is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

int exec(const Context& ctx) {
    // Checked before any socket exists, which would otherwise take a free 0 or 1.
    for (const int fd : {STDIN_FILENO, STDOUT_FILENO}) {
        if (is_open(fd)) continue;
        ctx.output.error(std::string("connect needs its standard ") +
                         (fd == STDIN_FILENO ? "input" : "output") +
                         " (the agent's pipe), but it is closed");
        return kExitError;
    }
    prepare_signals();
    // The daemon is always local for now (a Unix socket); a remote one will force copying.
    const bool terminal = ::isatty(STDIN_FILENO) || ::isatty(STDOUT_FILENO);
    const Transport transport =
        ctx.line().has("copy") || terminal ? Transport::copy : Transport::pass_fds;
    return bridge_session(ctx.socket_path, ctx.line().args.at(0), transport,
                          AgentEnds{STDIN_FILENO, STDOUT_FILENO}, ctx.output.err());
}

}  // namespace

extern const Command cmd_connect{
    .name = "connect",
    .usage = "connect [--copy] NAME",
    .summary = "be a server's MCP stdio endpoint for an agent",
    .help =
        "Give the agent that runs this command its own MCP session on server NAME, started\n"
        "by mcpd if it is not running. Put it in the agent's MCP configuration in place of\n"
        "the server's own command:\n"
        "\n"
        "  \"mcpServers\": {\"NAME\": {\"command\": \"mcpctl\", \"args\": [\"connect\", "
        "\"NAME\"]}}\n"
        "\n"
        "adding \"--socket\", \"PATH\" before \"connect\" when mcpd does not listen on the\n"
        "default socket. The agent then talks MCP on mcpctl's stdin and stdout.\n"
        "\n"
        "When neither stdin nor stdout is a terminal, mcpctl hands both to mcpd, which talks\n"
        "to the agent directly; mcpctl only waits for the session to end. Otherwise, or with\n"
        "--copy, mcpctl copies the bytes between them and mcpd's socket. Either way stdout\n"
        "carries nothing but the server's messages: errors go to stderr, and --json does not\n"
        "apply. 'mcpctl sessions' lists the sessions.\n"
        "\n"
        "Exit status: 0 when the agent ended the session by closing mcpctl's stdin (when\n"
        "copying: whenever mcpd closed the session); 1 when mcpd refused (unknown, failed or\n"
        "denied server, session limit) or ended the session itself (the reason is printed);\n"
        "3 when mcpd is not running. SIGINT, SIGTERM and SIGHUP end mcpctl and with it the\n"
        "session at once.\n",
    .options = kOptions,
    .min_args = 1,
    .max_args = 1,
    .build = build,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
