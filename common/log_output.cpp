#include "common/log_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace mcpd::log {

namespace {

// Write what the descriptor takes now: the count written, 0 when it is full, -1 on an error.
ssize_t write_some(int fd, std::string_view bytes) {
    for (;;) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return -1;
    }
}

}  // namespace

void LineOutput::line(std::string_view text) {
    if (pending()) {
        flush();
        if (sent_ < queue_.size()) {
            if (queued_bytes() + text.size() > kMaxQueuedLogBytes) {
                ++dropped_;
                ++dropped_unreported_;
                return;
            }
            queue_.append(text);
            return;
        }
    }
    // One write per line keeps lines whole when several processes share the descriptor.
    const ssize_t n = write_some(fd_, text);
    if (n < 0 || static_cast<std::size_t>(n) == text.size()) return;  // an error: nowhere to say it
    queue_.append(text.substr(static_cast<std::size_t>(n)));
    if (on_backlog_ != nullptr) on_backlog_();
}

bool LineOutput::flush() {
    while (sent_ < queue_.size()) {
        const ssize_t n = write_some(fd_, std::string_view(queue_).substr(sent_));
        if (n < 0) {  // the descriptor is gone for good: stop keeping lines for it
            queue_.clear();
            sent_ = 0;
            dropped_unreported_ = 0;
            return false;
        }
        if (n == 0) {
            compact();
            return true;
        }
        sent_ += static_cast<std::size_t>(n);
    }
    compact();
    if (dropped_unreported_ > 0) {
        const std::string note = "mcpd: " + std::to_string(dropped_unreported_) +
                                 " log lines were dropped: stderr did not take them in time (" +
                                 std::to_string(dropped_) + " since start)\n";
        dropped_unreported_ = 0;
        const ssize_t n = write_some(fd_, note);
        if (n >= 0 && static_cast<std::size_t>(n) < note.size())
            queue_.append(std::string_view(note).substr(static_cast<std::size_t>(n)));
    }
    return sent_ < queue_.size();
}

void LineOutput::compact() {
    if (sent_ == queue_.size()) {
        queue_.clear();
        sent_ = 0;
    } else if (sent_ > 64 * 1024 && sent_ * 2 > queue_.size()) {
        queue_.erase(0, sent_);
        sent_ = 0;
    }
}

LineOutput& stderr_output() {
    static LineOutput output(STDERR_FILENO);
    return output;
}

void use_nonblocking_stderr() {
    static bool done = false;
    if (done) return;
    done = true;
    struct stat st {};
    if (::fstat(STDERR_FILENO, &st) != 0 || S_ISREG(st.st_mode)) return;  // a file never blocks
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        // A new open file description of the same pipe or terminal: O_NONBLOCK on it leaves
        // the one we share as it was.
        const int fd = ::open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
            stderr_output().set_fd(fd);
            return;
        }
    }
    // A socket (journald's stream) cannot be reopened; it is ours alone anyway.
    const int flags = ::fcntl(STDERR_FILENO, F_GETFL);
    if (flags >= 0) ::fcntl(STDERR_FILENO, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace mcpd::log
