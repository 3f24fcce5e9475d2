// One running server process: its pid and process group, and its three pipes.
//
// stdout is read as lines (JSON-RPC), stderr as lines (logs); stdin takes lines. The record
// lives until both its pipes reached EOF and its exit was reaped, whichever comes last (tmux's
// job rule): late output or a late exit never touches freed memory.
#pragma once

#include <event2/bufferevent.h>

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/json_envelope.h"
#include "common/unique_fd.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/line_source.h"
#include "daemon/server/server_processes.h"
#include "daemon/server/spawn.h"

namespace mcpd {

class ChildProcess {
public:
    struct Callbacks {
        // Each gets the record it is about, so one set of callbacks serves every process.
        // A stdout line, lying in the read buffer (valid during the call), padded for scanning.
        std::function<void(ChildProcess&, wire::PaddedText line)> on_message;
        // A stdout line over the limit, once it has ended: its size and its first and last
        // bytes (LineReader::kEdgeBytes each).
        std::function<void(ChildProcess&, std::size_t bytes, std::string_view head,
                           std::string_view tail)>
            on_oversized;
        std::function<void(ChildProcess&, std::string_view line)> on_log;  // a stderr line
        std::function<void(ChildProcess&)> on_stdout_closed;  // stdout EOF or error
        std::function<void(ChildProcess&)> on_finished;       // pipes closed and exit reaped
        // Queued stdin fell to the low watermark (set_input_watermark).
        std::function<void(ChildProcess&)> on_input_drained;
    };

    // Writes to stdin, and stdout's lines are read, through `loop`'s held writes.
    ChildProcess(EventLoop& loop, SpawnedProcess process, std::size_t max_message_bytes,
                 Callbacks callbacks);
    ~ChildProcess();
    ChildProcess(const ChildProcess&) = delete;
    ChildProcess& operator=(const ChildProcess&) = delete;

    int pid() const { return pid_; }
    // Its process group and tag: what finds the processes that left the group.
    ServerMark mark() const { return {pid_, tag_}; }

    // Queue one message (a newline is appended). False once stdin is closed.
    bool send(std::string_view line);
    // The same for a message in pieces, written in order.
    bool send(std::span<const std::string_view> pieces);
    std::size_t queued_input_bytes() const;
    // Call on_input_drained once queued stdin falls to `low` bytes.
    void set_input_watermark(std::size_t low);
    // Close stdin now, dropping anything still queued: the first step of the stop ladder.
    // What was dropped is kept for take_unwritten_input().
    void close_stdin();
    // The bytes queued for stdin that never reached the pipe, once stdin closed (bounded by
    // what the supervisor lets queue before it pauses the sessions): what the router may
    // send to the next process (daemon/mux/router_replay.cpp).
    std::string take_unwritten_input() { return std::move(unwritten_input_); }
    // Signal its process group, and the descendants that left it (daemon/server/server_processes.h).
    void signal_group(int signo) const;

    // An upgrade in place (docs/UPGRADE.md). Whether its pipes can be handed to the binary
    // that replaces mcpd now: all three open, nothing queued for stdin, no whole line or
    // oversized line read and not yet handed out; empty when they can, else why not.
    std::string why_not_carried() const;
    // The descriptors of stdin, stdout and stderr, and the bytes of a line each output pipe
    // has begun (read, not yet ended by a newline).
    int stdin_fd() const;
    int stdout_fd() const { return stdout_fd_.get(); }
    int stderr_fd() const { return stderr_fd_.get(); }
    std::string_view begun_stdout() const { return stdout_.reader().unread(); }
    std::string_view begun_stderr() const { return stderr_.reader().unread(); }
    // In the new process: those begun lines, ahead of whatever the pipes bring next.
    void resume_begun(std::string_view out, std::string_view err);
    // Stop reading stdout and stderr while the new binary checks the state that holds their
    // begun lines (what it writes meanwhile waits in the pipes), or read on (a refusal).
    void hold_output(bool hold);

    // From the reaper (the status is the supervisor's to judge).
    void mark_exited(int status);
    bool exited() const { return exited_; }
    // Stop waiting for EOF (a grandchild that escaped the process group may hold the pipes).
    void abandon_pipes();
    bool finished() const { return exited_ && !stdout_.open() && !stderr_.open(); }

private:
    static void on_stdin_event(bufferevent* bev, short what, void* self);
    static void on_stdin_written(bufferevent* bev, void* self);

    LineSource::Callbacks stdout_callbacks();
    LineSource::Callbacks stderr_callbacks();
    void stdout_ended();
    void stderr_ended();
    void close_stdout();
    void close_stderr();
    void check_finished();

    int pid_;
    std::string tag_;
    Callbacks callbacks_;
    WriteCoalescer& writes_;
    BufferEvent stdin_;  // empty once stdin is closed
    HeldWrites stdin_held_;  // what the current pass of the loop holds back for stdin_
    UniqueFd stdout_fd_;
    UniqueFd stderr_fd_;
    // After their descriptors, which they watch. Closed at EOF (or when abandoned).
    LineSource stdout_;
    LineSource stderr_;
    bool exited_ = false;
    std::string unwritten_input_;  // see take_unwritten_input
    bool finished_reported_ = false;
};

}  // namespace mcpd
