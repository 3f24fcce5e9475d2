// mcpctl connect [--copy] NAME...: the command an agent runs as its MCP server.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
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

mcpd::Result<nlohmann::json> build(const CommandLine& line) {
    return attach_request(line.args, /*pass_fds=*/false);
}

// SIGINT, SIGTERM and SIGHUP end mcpctl at once (the kernel then closes the control connection,
// which tells mcpd to end the session), so they must not stay blocked. An inherited SIG_IGN on
// SIGINT or SIGHUP is kept: an agent (or nohup) that shields its children from ^C or a hangup
// means it. SIGPIPE is ignored so that a closed stdout is a write error, not a death.
void prepare_signals() {
    sigset_t ending;
    sigemptyset(&ending);
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&ending, sig);
    sigprocmask(SIG_UNBLOCK, &ending, nullptr);
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGPIPE, SIG_IGN);
}

// Whether `fd` is an open descriptor.
bool is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

// Whether `fd` can be handed to mcpd: a pipe or a socket, as an agent provides. A terminal is
// left to mcpctl (the user types there), and regular files and /dev/null cannot be waited on
// with epoll, so those get copied too.
bool can_pass(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
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
    // A remote daemon (--host) cannot take descriptors: bridge_session copies then.
    const bool pass = !ctx.line().has("copy") && can_pass(STDIN_FILENO) && can_pass(STDOUT_FILENO);
    return bridge_session(ctx.endpoint, ctx.line().args,
                          pass ? Transport::pass_fds : Transport::copy,
                          AgentEnds{STDIN_FILENO, STDOUT_FILENO}, ctx.output.err(),
                          find_wait_helper());
}

}  // namespace

extern const Command cmd_connect{
    .name = "connect",
    .usage = "connect [--copy] NAME...",
    .summary = "be a server's MCP stdio endpoint for an agent",
    .help =
        "Give the agent that runs this command its own MCP session on server NAME, started\n"
        "by mcpd if it is not running. Put it in the agent's MCP configuration in place of\n"
        "the server's own command:\n"
        "\n"
        "  \"mcpServers\": {\n"
        "    \"NAME\": {\"command\": \"mcpctl\", \"args\": [\"connect\", \"NAME\"]}\n"
        "  }\n"
        "\n"
        "adding \"--socket\", \"PATH\" before \"connect\" when mcpd does not listen on the\n"
        "default socket. The agent then talks MCP on mcpctl's stdin and stdout.\n"
        "\n"
        "When stdin and stdout are pipes or sockets (as an agent provides), mcpctl hands both\n"
        "to mcpd, which talks to the agent directly; mcpctl only waits for the session to\n"
        "end. Otherwise (a terminal, a file), or with --copy, mcpctl copies the bytes between\n"
        "them and mcpd's socket. Either way stdout carries nothing but the server's\n"
        "messages: errors go to stderr, and --json does not apply. 'mcpctl sessions' lists\n"
        "the sessions.\n"
        "\n"
        "NAME may be a group of the registry ([groups.NAME]): one session over all of its\n"
        "servers, their tools and prompts named SERVER__NAME. Several names make such a\n"
        "group on the spot: 'mcpctl connect github memory'.\n"
        "\n"
        "Exit status: 0 when the agent ended the session by closing mcpctl's stdin (when\n"
        "copying: whenever mcpd closed the session); 1 when mcpd refused (unknown, failed or\n"
        "denied server, session limit) or ended the session itself (the reason is printed);\n"
        "3 when mcpd is not running. SIGINT, SIGTERM and SIGHUP end mcpctl and with it the\n"
        "session at once.\n",
    .options = kOptions,
    .min_args = 1,
    .max_args = 64,
    .build = build,
    .render = nullptr,
    .exec = exec,
};

}  // namespace mcpctl
