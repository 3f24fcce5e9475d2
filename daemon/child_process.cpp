#include "daemon/child_process.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <signal.h>

#include <cerrno>

#include "daemon/eager_write.h"

namespace mcpd {
namespace {

// A stderr line longer than this is cut: logs are for people.
constexpr std::size_t kMaxLogLine = 8192;

bufferevent* pipe_event(event_base* base, UniqueFd& fd) {
    return bufferevent_socket_new(base, fd.release(), BEV_OPT_CLOSE_ON_FREE);
}

void free_event(event*& ev) {
    if (ev == nullptr) return;
    event_free(ev);
    ev = nullptr;
}

// The most the stdin bufferevent writes in one loop turn (libevent's default is 16 KiB).
constexpr std::size_t kMaxSingleWrite = 1024 * 1024;

void free_event(bufferevent*& bev) {
    if (bev == nullptr) return;
    drop_held_writes(bev);
    bufferevent_setcb(bev, nullptr, nullptr, nullptr, nullptr);
    bufferevent_free(bev);
    bev = nullptr;
}

}  // namespace

ChildProcess::ChildProcess(event_base* base, SpawnedProcess process,
                           std::size_t max_message_bytes, Callbacks callbacks)
    : pid_(process.pid),
      tag_(process.tag),
      callbacks_(std::move(callbacks)),
      stdout_reader_(max_message_bytes, /*keep_edges=*/true),
      stderr_reader_(kMaxLogLine) {
    stdin_ = pipe_event(base, process.stdin_fd);
    bufferevent_setcb(stdin_, nullptr, &ChildProcess::on_stdin_written, &ChildProcess::on_stdin_event,
                      this);
    bufferevent_set_max_single_write(stdin_, kMaxSingleWrite);
    stdout_fd_ = std::move(process.stdout_fd);
    stderr_fd_ = std::move(process.stderr_fd);
    stdout_ = event_new(base, stdout_fd_.get(), EV_READ | EV_PERSIST, &ChildProcess::on_stdout_readable,
                        this);
    stderr_ = event_new(base, stderr_fd_.get(), EV_READ | EV_PERSIST, &ChildProcess::on_stderr_readable,
                        this);
    event_add(stdout_, nullptr);
    event_add(stderr_, nullptr);
}

ChildProcess::~ChildProcess() {
    free_event(stdin_);
    close_stdout();
    close_stderr();
}

bool ChildProcess::send(std::string_view line) {
    if (stdin_ == nullptr) return false;
    write_or_queue_line(stdin_, line);
    return true;
}

bool ChildProcess::send(std::span<const std::string_view> pieces) {
    if (stdin_ == nullptr) return false;
    write_or_queue_line(stdin_, pieces);
    return true;
}

std::size_t ChildProcess::queued_input_bytes() const {
    return stdin_ == nullptr ? 0 : evbuffer_get_length(bufferevent_get_output(stdin_)) + held_bytes(stdin_);
}

void ChildProcess::close_stdin() { free_event(stdin_); }

void ChildProcess::set_input_watermark(std::size_t low) {
    if (stdin_ != nullptr) bufferevent_setwatermark(stdin_, EV_WRITE, low, 0);
}

void ChildProcess::on_stdin_written(bufferevent*, void* self) {
    auto* child = static_cast<ChildProcess*>(self);
    if (child->callbacks_.on_input_drained) child->callbacks_.on_input_drained(*child);
}

void ChildProcess::signal_group(int signo) const {
    if (exited_) return;
    ::kill(-pid_, signo);
    signal_escaped_processes(mark(), signo, ::getpid());
}

void ChildProcess::mark_exited(int status) {
    exited_ = true;
    exit_status_ = status;
    close_stdin();
    check_finished();
}

void ChildProcess::abandon_pipes() {
    close_stdout();
    close_stderr();
    check_finished();
}

void ChildProcess::on_stdout_readable(evutil_socket_t fd, short, void* self) {
    auto* child = static_cast<ChildProcess*>(self);
    const ssize_t n = child->stdout_reader_.read_from(fd);
    if (n > 0) {
        child->drain_stdout(false);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        // EOF or a read error: either way nothing more comes from this pipe.
        child->stdout_ended();
    }
}

void ChildProcess::stdout_ended() {
    drain_stdout(true);
    close_stdout();
    if (callbacks_.on_stdout_closed) callbacks_.on_stdout_closed(*this);
    check_finished();
}

void ChildProcess::on_stderr_readable(evutil_socket_t fd, short, void* self) {
    auto* child = static_cast<ChildProcess*>(self);
    const ssize_t n = child->stderr_reader_.read_from(fd);
    if (n > 0) {
        child->drain_stderr(false);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        child->stderr_ended();
    }
}

void ChildProcess::stderr_ended() {
    drain_stderr(true);
    close_stderr();
    check_finished();
}

void ChildProcess::on_stdin_event(bufferevent*, short, void* self) {
    // EPIPE: the child closed its stdin. What it still writes is read until stdout closes.
    static_cast<ChildProcess*>(self)->close_stdin();
}

void ChildProcess::drain_stdout(bool at_eof) {
    const WriteBurst burst;
    while (stdout_ != nullptr) {
        std::string_view line;
        const LineReader::Result r = at_eof ? stdout_reader_.finish(line) : stdout_reader_.next(line);
        if (r == LineReader::Result::need_more) return;
        if (r == LineReader::Result::oversized) {
            if (callbacks_.on_oversized) {
                callbacks_.on_oversized(*this, stdout_reader_.discarded_bytes(),
                                        stdout_reader_.discarded_head(),
                                        stdout_reader_.discarded_tail());
            }
            continue;  // unless the callback closed us
        }
        const MoreInput more(stdout_reader_.buffered() > 0);
        callbacks_.on_message(*this, wire::PaddedText{line});
    }
}

void ChildProcess::drain_stderr(bool at_eof) {
    while (stderr_ != nullptr) {
        std::string_view line;
        const LineReader::Result r = at_eof ? stderr_reader_.finish(line) : stderr_reader_.next(line);
        if (r == LineReader::Result::need_more) return;
        if (r == LineReader::Result::oversized) {
            callbacks_.on_log(*this, "[a log line of more than " + std::to_string(kMaxLogLine) +
                                         " bytes was dropped]");
            continue;
        }
        callbacks_.on_log(*this, line);
    }
}

void ChildProcess::close_stdout() {
    free_event(stdout_);
    stdout_fd_.reset();
}

void ChildProcess::close_stderr() {
    free_event(stderr_);
    stderr_fd_.reset();
}

void ChildProcess::check_finished() {
    if (finished_reported_ || !finished()) return;
    finished_reported_ = true;
    if (callbacks_.on_finished) callbacks_.on_finished(*this);
}

}  // namespace mcpd
