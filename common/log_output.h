// Where the daemon's log lines go: stderr, written without ever blocking. A daemon whose
// stderr is a pipe nobody drains (a wrapper that stopped reading, a full journald stream)
// must not freeze every session on every server, so lines wait in a bounded queue and what
// does not fit is counted and reported as dropped once stderr takes lines again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mcpd::log {

// Queued bytes past which new lines are dropped (and counted) until the descriptor drains.
inline constexpr std::size_t kMaxQueuedLogBytes = 1024 * 1024;

// Whole lines to one descriptor: written at once when it takes them, else queued (bounded).
class LineOutput {
public:
    explicit LineOutput(int fd) : fd_(fd) {}

    // Write one whole line (with its newline), or queue it behind lines still waiting.
    void line(std::string_view text);
    // Write what waits, as much as the descriptor takes now; whether anything still waits.
    bool flush();
    bool pending() const { return sent_ < queue_.size() || dropped_unreported_ > 0; }
    std::size_t queued_bytes() const { return queue_.size() - sent_; }
    std::uint64_t dropped() const { return dropped_; }
    int fd() const { return fd_; }
    void set_fd(int fd) { fd_ = fd; }
    // Called when lines start to wait, so that a loop can watch fd().
    void on_backlog(void (*callback)()) { on_backlog_ = callback; }

private:
    void compact();

    int fd_;
    std::string queue_;    // whole lines, oldest first
    std::size_t sent_ = 0;  // bytes of queue_ already written
    std::uint64_t dropped_ = 0;
    std::uint64_t dropped_unreported_ = 0;
    void (*on_backlog_)() = nullptr;
};

// The daemon log's output (stderr).
LineOutput& stderr_output();

// From now on write stderr without blocking: through a descriptor of its own opened with
// O_NONBLOCK when stderr is a pipe, a FIFO or a terminal (so the one we share with whoever
// started us keeps its flags), else by setting O_NONBLOCK on stderr itself. Idempotent.
void use_nonblocking_stderr();

}  // namespace mcpd::log
