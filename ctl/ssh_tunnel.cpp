#include "ctl/ssh_tunnel.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "ctl/command.h"
#include "ctl/daemon_client.h"

extern char** environ;

namespace mcpctl {

namespace {

// ssh's own exit status for a connection or login failure.
constexpr int kSshFailed = 255;
// How long the destructor lets ssh finish on its own after the connection closed.
constexpr mcpd::Duration kExitGrace = std::chrono::seconds(2);

// The descriptor moved to 3 or above, so that dup2 onto 0 and 1 never meets itself.
int above_stdio(int fd) {
    if (fd > STDERR_FILENO) return fd;
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    ::close(fd);
    return moved;
}

std::string host_name(const SshTarget& target) {
    return target.user.empty() ? target.host : target.user + "@" + target.host;
}

}  // namespace

std::optional<ClientError> explain_ssh_exit(int wait_status, const SshTarget& target) {
    const std::string host = host_name(target);
    if (WIFSIGNALED(wait_status))
        return ClientError{kExitError, "ssh",
                           "ssh to " + host + " was killed by signal " +
                               std::to_string(WTERMSIG(wait_status))};
    const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 0;
    switch (code) {
        case 0:
            return std::nullopt;
        case kSshFailed:
            return ClientError{kExitError, "ssh",
                               "ssh could not connect to " + host +
                                   " (exit status 255; ssh's message, if any, is above)"};
        case kExitNotRunning:
            return ClientError{kExitNotRunning, "not_running",
                               "mcpd is not running on " + host +
                                   " (the remote mcpctl's message is above)"};
        case 126:
        case 127:
            return ClientError{kExitError, "ssh",
                               host + " has no runnable 'mcpctl' on the PATH of a "
                                      "non-interactive ssh session (exit status " +
                                   std::to_string(code) + ")"};
        default:
            return ClientError{kExitError, "ssh",
                               "'mcpctl dial' on " + host + " failed with exit status " +
                                   std::to_string(code) + " (its message is above)"};
    }
}

mcpd::Result<mcpd::UniqueFd> SshTunnel::open(const SshTarget& target) {
    int ends[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
        return mcpd::permanent_failure(std::string("cannot create a socket pair for ssh: ") +
                                       std::strerror(errno));
    mcpd::UniqueFd ours(above_stdio(ends[0]));
    mcpd::UniqueFd theirs(above_stdio(ends[1]));
    if (!ours || !theirs)
        return mcpd::permanent_failure(std::string("cannot move the ssh socket pair: ") +
                                       std::strerror(errno));

    const std::vector<std::string> words = ssh_command(target, std::getenv("MCPD_SSH_COMMAND"));
    std::vector<char*> argv;
    for (const auto& word : words) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);

    // ssh gets the socket pair as stdin and stdout, our stderr (for its prompts and errors),
    // and default signal dispositions and mask: mcpctl ignores SIGPIPE and may block SIGINT.
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, theirs.get(), STDOUT_FILENO);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, sig);
    sigset_t empty;
    sigemptyset(&empty);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setsigmask(&attributes, &empty);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, argv[0], &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0)
        return mcpd::permanent_failure("cannot run " + words[0] + ": " + std::strerror(rc));
    pid_ = pid;
    status_.reset();
    return ours;
}

void SshTunnel::wait(mcpd::Duration timeout) {
    if (!running()) return;
    const auto deadline = mcpd::Clock::now() + timeout;
    for (;;) {
        int status = 0;
        const pid_t done = ::waitpid(pid_, &status, WNOHANG);
        if (done == pid_ || (done < 0 && errno != EINTR)) {
            status_ = done == pid_ ? status : 0;
            return;
        }
        if (mcpd::Clock::now() >= deadline) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

std::optional<ClientError> SshTunnel::failure(const SshTarget& target, mcpd::Duration timeout) {
    wait(timeout);
    if (!status_) return std::nullopt;
    return explain_ssh_exit(*status_, target);
}

SshTunnel::~SshTunnel() {
    if (pid_ <= 0) return;
    wait(kExitGrace);
    if (!running()) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
}

}  // namespace mcpctl
