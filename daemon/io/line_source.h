// Lines from a non-blocking descriptor: read with plain read() into a LineReader when the
// descriptor is readable, and handed out one by one.
//
// Sessions read their clients' input this way, and child processes their stdout and stderr.
// A plain read() fills the line buffer itself, where a bufferevent would read at most 4 KiB per
// loop turn and ask FIONREAD first.
#pragma once

#include <event2/event.h>

#include <cstddef>
#include <functional>
#include <string_view>

#include "common/json_envelope.h"
#include "common/line_reader.h"
#include "daemon/io/eager_write.h"
#include "daemon/io/fd_watcher.h"

namespace mcpd {

class LineSource {
public:
    // The owner outlives its source's callbacks; a callback may stop() or close() the source.
    struct Callbacks {
        // A complete line, lying in the read buffer (valid during the call), padded for scanning.
        std::function<void(wire::PaddedText line)> on_line;
        // A line over the limit was discarded: reader() tells its size (and, with keep_edges,
        // its first and last bytes).
        std::function<void()> on_oversized;
        // The descriptor reached EOF; every line before it was handed out (unless the source was
        // closed meanwhile, and then this does not run). Nothing is read after it.
        std::function<void()> on_eof;
        // A read failed (`error` is its errno); nothing more is read or handed out. Without
        // it, a failed read counts as EOF.
        std::function<void(int error)> on_error;
    };

    // Lines of at most `max_line_bytes` from `fd` (not owned). With `writes`, each read's lines
    // are handed out in one burst of its held writes (daemon/io/eager_write.h). Nothing is read
    // before start().
    LineSource(event_base* base, int fd, std::size_t max_line_bytes, bool keep_edges,
               WriteCoalescer* writes, Callbacks callbacks);
    LineSource(const LineSource&) = delete;
    LineSource& operator=(const LineSource&) = delete;

    // Watch the descriptor, and hand out the lines already buffered.
    void start();
    // Stop reading and handing out lines, until resume().
    void pause();
    // Read again (unless EOF was seen), handing out what was buffered meanwhile first.
    void resume();
    // Nothing more is read or handed out; the descriptor is no longer watched.
    void close();

    bool open() const { return !closed_; }
    bool paused() const { return paused_; }
    bool at_eof() const { return eof_; }
    LineReader& reader() { return reader_; }
    const LineReader& reader() const { return reader_; }

private:
    void on_readable();
    void ended();
    // Hand out the buffered lines; `at_eof`: the unterminated last one too, even while paused.
    void hand_out(bool at_eof);
    // A large line, handed out with its buffer lent to the write path (daemon/io/line_loan.h):
    // kept out of hand_out, which every small line passes through.
    void hand_out_lent(std::string_view line);

    event_base* base_;
    int fd_;
    LineReader reader_;
    WriteCoalescer* writes_;
    Callbacks callbacks_;
    FdWatcher watcher_;
    bool paused_ = false;
    bool eof_ = false;
    bool closed_ = false;
};

}  // namespace mcpd
