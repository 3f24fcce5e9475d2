#include "daemon/server/keeper.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "common/log.h"
#include "common/scope_guard.h"
#include "daemon/server/server_processes.h"

namespace mcpd {
namespace {

// Close every descriptor but `keep`.
void close_all_but(int keep) {
    const auto close_range = [](unsigned first, unsigned last) {
        return ::syscall(SYS_close_range, first, last, 0U) == 0;
    };
    const auto kept = static_cast<unsigned>(keep);
    if ((kept == 0 || close_range(0, kept - 1)) && close_range(kept + 1, ~0U)) return;
    // Kernels before 5.9: one close per possible descriptor.
    rlimit limit{};
    const long max = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                         ? static_cast<long>(limit.rlim_cur)
                         : 65536;
    for (long fd = 0; fd < max; ++fd) {
        if (fd != keep) ::close(static_cast<int>(fd));
    }
}

// The keeper's whole life, in the forked child (every signal already blocked).
[[noreturn]] void run_keeper(int read_fd, pid_t daemon) {
    close_all_but(read_fd);
    ::prctl(PR_SET_NAME, "mcpd-keeper");
    if (::chdir("/") != 0) {
        // Nothing to report it to; staying in mcpd's directory is harmless.
    }
    const std::map<pid_t, std::uint32_t> groups = read_keeper_pipe(read_fd);
    // Every group first, so no server outlives the keeper's looking for its escaped processes.
    for (const auto& [group, serial] : groups) ::kill(-group, SIGKILL);
    for (const auto& [group, serial] : groups) {
        ServerMark mark{group, serial == 0 ? std::string() : process_tag(daemon, serial)};
        kill_server_processes(mark, 0);
    }
    _exit(0);
}

}  // namespace

void KeeperLedger::feed(std::string_view bytes) {
    partial_.append(bytes);
    std::size_t at = 0;
    for (; partial_.size() - at >= sizeof(KeeperMessage); at += sizeof(KeeperMessage)) {
        KeeperMessage message;
        std::memcpy(&message, partial_.data() + at, sizeof message);
        if (message.pgid < 2) continue;
        if (message.op == static_cast<std::uint32_t>(KeeperOp::add)) {
            groups_[message.pgid] = message.serial;
        } else if (message.op == static_cast<std::uint32_t>(KeeperOp::remove)) {
            groups_.erase(message.pgid);
        }
    }
    partial_.erase(0, at);
}

std::map<pid_t, std::uint32_t> read_keeper_pipe(int fd) {
    KeeperLedger ledger;
    std::array<char, 4096> buffer{};
    for (;;) {
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n > 0) {
            ledger.feed({buffer.data(), static_cast<std::size_t>(n)});
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        return ledger.groups();  // EOF: the writer is gone (or the pipe broke)
    }
}

Result<KeeperProcess> fork_keeper() {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
        return transient_failure(std::string("cannot create the keeper's pipe: ") +
                                 std::strerror(errno));
    }
    UniqueFd read_end(fds[0]);
    UniqueFd write_end(fds[1]);
    pid_t pid = 0;
    int fork_errno = 0;
    {
        // Blocked across fork, so no signal can reach the keeper before it is set up: it keeps
        // them blocked for good (SIGKILL and SIGSTOP aside, nothing but EOF ends it; run_keeper
        // never returns).
        const AllSignalsBlocked blocked;
        const pid_t daemon = ::getpid();
        pid = ::fork();
        if (pid == 0) run_keeper(read_end.get(), daemon);
        fork_errno = errno;
    }
    if (pid < 0) {
        return transient_failure(std::string("cannot fork the keeper: ") +
                                 std::strerror(fork_errno));
    }
    ::fcntl(write_end.get(), F_SETFL, ::fcntl(write_end.get(), F_GETFL) | O_NONBLOCK);
    return KeeperProcess{pid, std::move(write_end)};
}

Keeper& Keeper::instance() {
    static Keeper keeper;
    return keeper;
}

void Keeper::start() {
    if (running()) return;
    Result<KeeperProcess> process = fork_keeper();
    if (!process) {
        log::warning(process.error() + "; servers' descendants may outlive mcpd if it is killed");
        return;
    }
    pid_ = process->pid;
    pipe_ = std::move(process->pipe);
    tracked_.clear();
    log::debug("keeper started, pid " + std::to_string(pid_));
}

void Keeper::adopt(pid_t pid, UniqueFd pipe, const std::vector<pid_t>& tracked) {
    pid_ = pid;
    pipe_ = std::move(pipe);
    tracked_ = std::unordered_set<pid_t>(tracked.begin(), tracked.end());
    log::debug("keeper taken over, pid " + std::to_string(pid_));
}

void Keeper::track(pid_t pgid, std::uint32_t serial) {
    if (running() && tracked_.insert(pgid).second) send(KeeperOp::add, pgid, serial);
}

void Keeper::untrack(pid_t pgid) {
    if (running() && tracked_.erase(pgid) > 0) send(KeeperOp::remove, pgid, 0);
}

bool Keeper::reaped(pid_t pid, int status) {
    if (pid_ <= 0 || pid != pid_) return false;
    log::error("the keeper (pid " + std::to_string(pid) + ") exited with status " +
               std::to_string(status) + ": servers' descendants may outlive mcpd if it is killed");
    pipe_.reset();
    pid_ = -1;
    tracked_.clear();
    return true;
}

void Keeper::send(KeeperOp op, pid_t pgid, std::uint32_t serial) {
    const KeeperMessage message{static_cast<std::uint32_t>(op), static_cast<std::int32_t>(pgid),
                                serial};
    ssize_t n;
    do {
        n = ::write(pipe_.get(), &message, sizeof message);
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof message)) return;
    // The keeper reads as fast as we write; a full pipe means it is stopped, EPIPE that it is
    // gone (the reaper will say so).
    log::warning(std::string("could not tell the keeper about process group ") +
                 std::to_string(pgid) + ": " + (n < 0 ? std::strerror(errno) : "short write"));
}

}  // namespace mcpd
