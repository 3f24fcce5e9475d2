#include "daemon/io/line_source.h"

#include <cerrno>
#include <optional>

#include "daemon/io/line_loan.h"

namespace mcpd {

LineSource::LineSource(event_base* base, int fd, std::size_t max_line_bytes, bool keep_edges,
                       WriteCoalescer* writes, Callbacks callbacks)
    : base_(base),
      fd_(fd),
      reader_(max_line_bytes, keep_edges),
      writes_(writes),
      callbacks_(std::move(callbacks)) {}

void LineSource::start() {
    if (closed_ || watcher_) return;
    watcher_ = FdWatcher(base_, fd_, EV_READ | EV_PERSIST, [this] { on_readable(); });
    if (paused_ || eof_) watcher_.disable();
    hand_out(false);
}

void LineSource::pause() {
    if (paused_ || closed_) return;
    paused_ = true;
    watcher_.disable();
}

void LineSource::resume() {
    if (!paused_ || closed_) return;
    paused_ = false;
    if (!eof_) watcher_.enable();
    hand_out(false);  // lines may have been buffered before the pause
}

void LineSource::close() {
    closed_ = true;
    // Only disabled: close() may run inside the watcher's own callback (EOF, an error), and
    // the watcher is freed with its owner, never in the callback that noticed the end.
    watcher_.disable();
}

void LineSource::on_readable() {
    const ssize_t n = reader_.read_from(fd_);
    if (n > 0) {
        hand_out(false);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && callbacks_.on_error) {
        const int error = errno;
        close();
        callbacks_.on_error(error);
        return;
    }
    ended();
}

void LineSource::ended() {
    if (eof_) return;
    hand_out(true);
    if (closed_) return;
    eof_ = true;
    watcher_.disable();
    if (callbacks_.on_eof) callbacks_.on_eof();
}

void LineSource::hand_out(bool at_eof) {
    std::optional<WriteBurst> burst;
    if (writes_ != nullptr) burst.emplace(*writes_);
    while (!closed_ && (!paused_ || at_eof)) {
        std::string_view line;
        const LineReader::Result r = at_eof ? reader_.finish(line) : reader_.next(line);
        if (r == LineReader::Result::need_more) return;
        if (r == LineReader::Result::oversized) {
            if (callbacks_.on_oversized) callbacks_.on_oversized();
            continue;
        }
        std::optional<MoreInput> more;
        if (writes_ != nullptr) {
            more.emplace(*writes_, reader_.buffered() > 0);
            if (line.size() >= LineLoan::kLendBytes) [[unlikely]] {
                hand_out_lent(line);
                continue;
            }
        }
        callbacks_.on_line(wire::PaddedText{line});
    }
}

void LineSource::hand_out_lent(std::string_view line) {
    const LineLoan loan(*writes_, reader_, line);
    callbacks_.on_line(wire::PaddedText{line});
}

}  // namespace mcpd
