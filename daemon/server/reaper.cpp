#include "daemon/server/reaper.h"

#include <sys/wait.h>

#include <csignal>
#include <cstring>

#include "common/log.h"
#include "daemon/server/keeper.h"

namespace mcpd {

int decode_wait_status(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return -WTERMSIG(status);
    return status;
}

Reaper::Reaper(event_base* base) : sigchld_(base, SIGCHLD, [this] { reap_all(); }) {}

void Reaper::watch(const ServerMark& mark, ExitHandler on_exit) {
    watched_[mark.leader] = Watched{mark, std::move(on_exit)};
}

void Reaper::forget(pid_t pid) { watched_.erase(pid); }

void Reaper::reap_all() {
    for (;;) {
        siginfo_t info{};
        // Look without reaping, so a known leader can have its group swept first.
        if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
            if (errno == EINTR) continue;
            return;  // ECHILD: no children at all
        }
        const pid_t pid = info.si_pid;
        if (pid == 0) return;

        const auto it = watched_.find(pid);
        if (it != watched_.end()) {
            const SweepResult swept = kill_server_processes(it->second.mark, ::getpid());
            if (swept.outside_group > 0) {
                log::info("killed " + std::to_string(swept.outside_group) + " process(es) of pid " +
                          std::to_string(pid) + " that had left its process group");
            }
        }

        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        const int decoded = decode_wait_status(status);
        Keeper::instance().untrack(pid);  // its group is gone (swept above)
        if (it == watched_.end()) {
            if (Keeper::instance().reaped(pid, decoded)) continue;  // not an orphan
            log::info("reaped adopted orphan pid " + std::to_string(pid) + " (status " +
                      std::to_string(decoded) + ")");
            continue;
        }
        ExitHandler handler = std::move(it->second.on_exit);
        watched_.erase(it);
        handler(decoded);
    }
}

}  // namespace mcpd
