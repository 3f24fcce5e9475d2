#include "daemon/server/child_process.h"

#include <event2/buffer.h>
#include <signal.h>

#include <string>

#include "common/check.h"
#include "daemon/io/buffer_event.h"

namespace mcpd {
namespace {

// A stderr line longer than this is cut: logs are for people.
constexpr std::size_t kMaxLogLine = 8192;

// The most the stdin bufferevent writes in one loop turn (libevent's default is 16 KiB).

}  // namespace

ChildProcess::ChildProcess(EventLoop& loop, SpawnedProcess process, std::size_t max_message_bytes,
                           Callbacks callbacks)
    : pid_(process.pid),
      tag_(process.tag),
      callbacks_(std::move(callbacks)),
      writes_(loop.writes()),
      stdin_(BufferEvent::over(loop.base(), std::move(process.stdin_fd))),
      stdout_fd_(std::move(process.stdout_fd)),
      stderr_fd_(std::move(process.stderr_fd)),
      stdout_(loop.base(), stdout_fd_.get(), max_message_bytes, /*keep_edges=*/true, &writes_,
              stdout_callbacks()),
      stderr_(loop.base(), stderr_fd_.get(), kMaxLogLine, /*keep_edges=*/false,
              /*writes=*/nullptr, stderr_callbacks()) {
    MCPD_CHECK(stdin_ != nullptr, "libevent could not allocate a server's stdin buffer");
    bufferevent_setcb(stdin_.get(), nullptr, &ChildProcess::on_stdin_written,
                      &ChildProcess::on_stdin_event, this);
    bufferevent_set_max_single_write(stdin_.get(), kMaxSingleWrite);
    stdout_.start();
    stderr_.start();
}

ChildProcess::~ChildProcess() {
    // Nobody reads what it never wrote any more: dropped, not kept.
    writes_.drop_held_writes(stdin_held_);
    stdin_.reset();
    close_stdout();
    close_stderr();
}

LineSource::Callbacks ChildProcess::stdout_callbacks() {
    LineSource::Callbacks callbacks;
    callbacks.on_line = [this](wire::PaddedText line) { callbacks_.on_message(*this, line); };
    callbacks.on_oversized = [this] {
        if (!callbacks_.on_oversized) return;
        const LineReader& reader = stdout_.reader();
        callbacks_.on_oversized(*this, reader.discarded_bytes(), reader.discarded_head(),
                                reader.discarded_tail());
    };
    // A read error ends it as EOF does: nothing more comes from this pipe either way.
    callbacks.on_eof = [this] { stdout_ended(); };
    return callbacks;
}

LineSource::Callbacks ChildProcess::stderr_callbacks() {
    LineSource::Callbacks callbacks;
    callbacks.on_line = [this](wire::PaddedText line) { callbacks_.on_log(*this, line.text); };
    callbacks.on_oversized = [this] {
        std::string note = "[a log line of more than ";
        note += std::to_string(kMaxLogLine);
        note += " bytes was dropped]";
        callbacks_.on_log(*this, note);
    };
    callbacks.on_eof = [this] { stderr_ended(); };
    return callbacks;
}

bool ChildProcess::send(std::string_view line) {
    if (!stdin_) return false;
    writes_.write_or_queue_line(stdin_.get(), stdin_held_, line);
    return true;
}

bool ChildProcess::send(std::span<const std::string_view> pieces) {
    if (!stdin_) return false;
    writes_.write_or_queue_line(stdin_.get(), stdin_held_, pieces);
    return true;
}

int ChildProcess::stdin_fd() const {
    return stdin_ ? stdin_.fd() : -1;
}

std::string ChildProcess::why_not_carried() const {
    if (exited_ || !stdin_ || !stdout_.open() || !stderr_.open())
        return "its process is ending";
    if (queued_input_bytes() > 0) return "mcpd is writing to it";
    for (const LineSource* source : {&stdout_, &stderr_}) {
        // (Only an upgrade pauses them, and a held source is what it carries.)
        if (source->reader().discarding() ||
            source->reader().unread().find('\n') != std::string_view::npos)
            return "lines it wrote wait to be read";
    }
    return {};
}

void ChildProcess::hold_output(bool hold) {
    for (LineSource* source : {&stdout_, &stderr_}) {
        if (hold) source->pause();
        else source->resume();
    }
}

void ChildProcess::resume_begun(std::string_view out, std::string_view err) {
    stdout_.reader().append(out);
    stderr_.reader().append(err);
}

std::size_t ChildProcess::queued_input_bytes() const {
    return !stdin_ ? 0 : evbuffer_get_length(stdin_.output()) + stdin_held_.size();
}

void ChildProcess::close_stdin() {
    if (!stdin_) return;
    // In order: the output buffer first, then what the current burst holds back for it.
    unwritten_input_ = buffered_bytes(stdin_.output());
    unwritten_input_ += writes_.take_held_writes(stdin_held_);
    stdin_.reset();
}

void ChildProcess::set_input_watermark(std::size_t low) {
    if (stdin_) bufferevent_setwatermark(stdin_.get(), EV_WRITE, low, 0);
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

void ChildProcess::mark_exited(int) {
    exited_ = true;
    close_stdin();
    check_finished();
}

void ChildProcess::abandon_pipes() {
    close_stdout();
    close_stderr();
    check_finished();
}

void ChildProcess::stdout_ended() {
    close_stdout();
    if (callbacks_.on_stdout_closed) callbacks_.on_stdout_closed(*this);
    check_finished();
}

void ChildProcess::stderr_ended() {
    close_stderr();
    check_finished();
}

void ChildProcess::on_stdin_event(bufferevent*, short, void* self) {
    // EPIPE: the child closed its stdin. What it still writes is read until stdout closes.
    static_cast<ChildProcess*>(self)->close_stdin();
}

void ChildProcess::close_stdout() {
    stdout_.close();
    stdout_fd_.reset();
}

void ChildProcess::close_stderr() {
    stderr_.close();
    stderr_fd_.reset();
}

void ChildProcess::check_finished() {
    if (finished_reported_ || !finished()) return;
    finished_reported_ = true;
    if (callbacks_.on_finished) callbacks_.on_finished(*this);
}

}  // namespace mcpd
