// StateCheck: the new binary reads the state before it replaces mcpd (upgrade_check.h).
#include "daemon/upgrade_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "common/child_setup.h"
#include "common/duration.h"

namespace mcpd {

StateCheck::StateCheck(event_base* base, Reaper& reaper, const std::string& binary, int state_fd,
                       std::string acknowledgement, OnDone done)
    : reaper_(reaper),
      binary_(binary),
      acknowledgement_(std::move(acknowledgement)),
      done_(std::move(done)),
      timeout_(base, [this] { on_timeout(); }),
      start_failed_(base, [this] { finish(permanent_failure(start_error_)); }) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        start_error_ = std::string("cannot make a pipe for the check: ") + std::strerror(errno);
        start_failed_.arm(Duration(0));
        return;
    }
    UniqueFd read_end(pipe_fds[0]);
    UniqueFd write_end(pipe_fds[1]);
    const pid_t parent = ::getpid();
    // Everything the child needs, made before fork: after it only async-signal-safe calls.
    const char* argv[] = {binary_.c_str(), "--check-state", "3", nullptr};
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const pid_t pid = ::fork();
    if (pid == 0) {
        prepare_forked_child(parent);
        ::setsid();
        if (null_fd >= 0) ::dup2(null_fd, STDIN_FILENO);
        ::dup2(write_end.get(), STDOUT_FILENO);
        ::dup2(write_end.get(), STDERR_FILENO);
        if (state_fd == 3) {
            ::fcntl(3, F_SETFD, 0);
        } else {
            ::dup2(state_fd, 3);
        }
        ::execv(argv[0], const_cast<char* const*>(argv));
        static constexpr char kFailed[] = "mcpd: the new binary could not be run\n";
        [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kFailed, sizeof kFailed - 1);
        ::_exit(127);
    }
    const int fork_errno = errno;
    if (null_fd >= 0) ::close(null_fd);
    if (pid < 0) {
        start_error_ = std::string("cannot start the check: ") + std::strerror(fork_errno);
        start_failed_.arm(Duration(0));
        return;
    }
    pid_ = pid;
    write_end.reset();
    output_fd_ = std::move(read_end);
    ::fcntl(output_fd_.get(), F_SETFL, ::fcntl(output_fd_.get(), F_GETFL) | O_NONBLOCK);
    output_ = FdWatcher(base, output_fd_.get(), EV_READ | EV_PERSIST, [this] { on_output(); });
    reaper_.watch(ServerMark{pid_, {}}, [this](int status) { on_exit(status); });
    timeout_.arm(kTimeout);
}

StateCheck::~StateCheck() {
    if (pid_ > 0 && !exited_) {
        ::kill(-pid_, SIGKILL);
        reaper_.forget(pid_);  // reaped later as an orphan
    }
}

void StateCheck::on_output() {
    char buffer[1024];
    for (;;) {
        const ssize_t n = ::read(output_fd_.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) break;
        const std::size_t room = kMaxOutputBytes - std::min(kMaxOutputBytes, output_text_.size());
        output_text_.append(buffer, std::min(room, static_cast<std::size_t>(n)));
    }
    eof_ = true;
    output_.reset();
    output_fd_.reset();
    finish_if_done();
}

void StateCheck::on_exit(int status) {
    exited_ = true;
    status_ = status;
    finish_if_done();
}

void StateCheck::on_timeout() {
    timed_out_ = true;
    if (pid_ > 0 && !exited_) ::kill(-pid_, SIGKILL);
    // Its output may be held open by a descendant: the verdict does not wait for it.
    exited_ = exited_ || pid_ <= 0;
    eof_ = true;
    output_.reset();
    finish(permanent_failure(binary_ + " --check-state did not answer within " +
                             format_duration(kTimeout)));
}

void StateCheck::finish_if_done() {
    if (!eof_ || !exited_ || !done_) return;
    timeout_.cancel();
    if (status_ == 0 && output_text_ == acknowledgement_ + "\n") {
        finish(mcpd::Done{});
        return;
    }
    // Its own words, first line only, made printable: they go into a reply and the log.
    std::string said = output_text_.substr(0, output_text_.find('\n'));
    if (said.size() > 300) said.resize(300);
    for (char& c : said) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    }
    std::string why = binary_ + " --check-state ";
    if (status_ == 127) why += "could not be run";
    else if (status_ < 0) why += "was killed by signal " + std::to_string(-status_);
    else if (status_ != 0) why += "exited with status " + std::to_string(status_);
    else if (said.empty()) why += "printed nothing (it is not an mcpd that reads this state)";
    else why += "did not acknowledge this state";
    if (!said.empty() && status_ != 127) why += ": " + said;
    finish(permanent_failure(why));
}

void StateCheck::finish(Result<Done> verdict) {
    if (!done_) return;
    timeout_.cancel();
    OnDone done = std::move(done_);
    done_ = nullptr;
    done(std::move(verdict));  // may destroy this
}

}  // namespace mcpd
