#include "daemon/child_process.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <signal.h>

#include "daemon/eager_write.h"

namespace mcpd {
namespace {

// A stderr line longer than this is cut: logs are for people.
constexpr std::size_t kMaxLogLine = 8192;

bufferevent* pipe_event(event_base* base, UniqueFd& fd) {
    return bufferevent_socket_new(base, fd.release(), BEV_OPT_CLOSE_ON_FREE);
}

void free_event(bufferevent*& bev) {
    if (bev == nullptr) return;
    bufferevent_setcb(bev, nullptr, nullptr, nullptr, nullptr);
    bufferevent_free(bev);
    bev = nullptr;
}

}  // namespace

ChildProcess::ChildProcess(event_base* base, SpawnedProcess process,
                           std::size_t max_message_bytes, Callbacks callbacks)
    : pid_(process.pid),
      callbacks_(std::move(callbacks)),
      stdout_reader_(max_message_bytes, /*keep_edges=*/true),
      stderr_reader_(kMaxLogLine) {
    stdin_ = pipe_event(base, process.stdin_fd);
    stdout_ = pipe_event(base, process.stdout_fd);
    stderr_ = pipe_event(base, process.stderr_fd);
    bufferevent_setcb(stdin_, nullptr, &ChildProcess::on_stdin_written, &ChildProcess::on_stdin_event,
                      this);
    bufferevent_setcb(stdout_, &ChildProcess::on_stdout_read, nullptr,
                      &ChildProcess::on_stdout_event, this);
    bufferevent_setcb(stderr_, &ChildProcess::on_stderr_read, nullptr,
                      &ChildProcess::on_stderr_event, this);
    bufferevent_enable(stdout_, EV_READ);
    bufferevent_enable(stderr_, EV_READ);
}

ChildProcess::~ChildProcess() {
    free_event(stdin_);
    free_event(stdout_);
    free_event(stderr_);
}

bool ChildProcess::send(std::string_view line) {
    if (stdin_ == nullptr) return false;
    write_or_queue_line(stdin_, line);
    return true;
}

std::size_t ChildProcess::queued_input_bytes() const {
    return stdin_ == nullptr ? 0 : evbuffer_get_length(bufferevent_get_output(stdin_));
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
    if (!exited_) ::kill(-pid_, signo);
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

void ChildProcess::on_stdout_read(bufferevent*, void* self) {
    static_cast<ChildProcess*>(self)->drain_stdout(false);
}

void ChildProcess::on_stdout_event(bufferevent*, short, void* self) {
    // EOF or a read error: either way nothing more comes from this pipe.
    auto* child = static_cast<ChildProcess*>(self);
    child->drain_stdout(true);
    child->close_stdout();
    if (child->callbacks_.on_stdout_closed) child->callbacks_.on_stdout_closed(*child);
    child->check_finished();
}

void ChildProcess::on_stderr_read(bufferevent*, void* self) {
    static_cast<ChildProcess*>(self)->drain_stderr(false);
}

void ChildProcess::on_stderr_event(bufferevent*, short, void* self) {
    auto* child = static_cast<ChildProcess*>(self);
    child->drain_stderr(true);
    child->close_stderr();
    child->check_finished();
}

void ChildProcess::on_stdin_event(bufferevent*, short, void* self) {
    // EPIPE: the child closed its stdin. What it still writes is read until stdout closes.
    static_cast<ChildProcess*>(self)->close_stdin();
}

void ChildProcess::drain_stdout(bool at_eof) {
    if (stdout_ == nullptr) return;
    evbuffer* in = bufferevent_get_input(stdout_);
    for (;;) {
        const LineReader::Result r =
            at_eof ? stdout_reader_.finish(in, message_) : stdout_reader_.next(in, message_);
        if (r == LineReader::Result::need_more) return;
        if (r == LineReader::Result::oversized) {
            if (callbacks_.on_oversized) {
                callbacks_.on_oversized(*this, stdout_reader_.discarded_bytes(),
                                        stdout_reader_.discarded_head(),
                                        stdout_reader_.discarded_tail());
            }
            if (stdout_ == nullptr) return;  // the callback closed us
            continue;
        }
        const MoreInput more(evbuffer_get_length(in) > 0);
        callbacks_.on_message(*this, message_);
        if (stdout_ == nullptr) return;  // the callback closed us
    }
}

void ChildProcess::drain_stderr(bool at_eof) {
    if (stderr_ == nullptr) return;
    evbuffer* in = bufferevent_get_input(stderr_);
    for (;;) {
        const LineReader::Result r =
            at_eof ? stderr_reader_.finish(in, log_line_) : stderr_reader_.next(in, log_line_);
        if (r == LineReader::Result::need_more) return;
        if (r == LineReader::Result::oversized) {
            callbacks_.on_log(*this, "[a log line of more than " + std::to_string(kMaxLogLine) +
                              " bytes was dropped]");
            continue;
        }
        callbacks_.on_log(*this, log_line_);
    }
}

void ChildProcess::close_stdout() { free_event(stdout_); }
void ChildProcess::close_stderr() { free_event(stderr_); }

void ChildProcess::check_finished() {
    if (finished_reported_ || !finished()) return;
    finished_reported_ = true;
    if (callbacks_.on_finished) callbacks_.on_finished(*this);
}

}  // namespace mcpd
