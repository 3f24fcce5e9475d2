// One MCP client session's transport over a byte stream: lines in from the client, lines out.
//
// A session reads either the control connection it was attached on, or descriptors an
// `mcpctl connect` passed over (the agent's own pipes). Output to a client that stops reading
// is capped (OutputCap): past the cap the session is cut off, so one slow client never holds
// up the server or anyone else; its queue also counts in the daemon-wide OutputBudget, which
// cuts the largest queues first. Input can be paused while the server's stdin is backed up.
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/json_envelope.h"
#include "daemon/control/output_budget.h"
#include "daemon/control/peer_auth.h"
#include "daemon/io/buffer_event.h"
#include "daemon/io/eager_write.h"
#include "daemon/io/line_source.h"
#include "daemon/mux/client_transport.h"

namespace mcpd {

// The per-session cap ([daemon] max_session_queue_bytes) as a rule on sizes: it bounds how
// much a client's queue grows while the client takes nothing from it, not how much waits.
// A queue that holds two large results is no sign of a client that stopped reading; one that
// grows by the cap with nothing taken is. So a client that keeps taking bytes is not cut by
// it, however much waits for it (the daemon-wide OutputBudget bounds that), and one that
// stopped reading is cut once the cap's worth has piled up since it last read. Two kinds of
// message are not counted, so that large results reach a reader before it has had time to
// read anything: the one sent when nothing was waiting (however large), and one more message
// after each time the client took bytes. Queued at most for a client that reads nothing: the
// cap, those two messages, and what its socket holds.
class OutputCap {
public:
    explicit OutputCap(std::size_t limit) : limit_(limit) {}

    // Whether a message of `size` bytes may be queued behind the `queued` bytes waiting (not
    // zero: a message to a client that has caught up always goes). Counts it when it may.
    bool admits(std::size_t queued, std::size_t size);
    // The client took bytes, or caught up: `queued` bytes wait now, and growth counts from
    // here.
    void taken(std::size_t queued);
    // Bytes queued since the client last took any, not counting what admits() let past.
    std::size_t grown(std::size_t queued) const { return queued > base_ ? queued - base_ : 0; }
    std::size_t limit() const { return limit_; }

private:
    std::size_t limit_;
    std::size_t base_ = 0;  // the queue's length growth counts from
    bool spare_ = true;     // one message past the cap is allowed until the client next reads
};

// A session over a byte stream: the control socket it was attached on, or the agent's pipes an
// `mcpctl connect` passed over. One JSON-RPC message per line each way.
class StreamTransport final : public ClientTransport {
public:
    // `input` and `output` are the descriptors `mcpctl connect` passed; a socket session has
    // only `input`, and `output` is empty. The input's descriptor is read directly (anything
    // already buffered in `input` is taken over); the bufferevents only write, through
    // `writes`, and report write errors. What waits for the client counts in `budget` until
    // the session is freed.
    StreamTransport(SessionId id, std::string server, PeerCredentials peer, BufferEvent input,
                    BufferEvent output, WriteCoalescer& writes, std::size_t max_message_bytes,
                    std::size_t max_queue_bytes, OutputBudget& budget);
    ~StreamTransport() override;

    bool passed_fds() const { return static_cast<bool>(output_); }
    const char* kind() const override { return passed_fds() ? "fds" : "socket"; }
    bool closed() const override { return closed_; }

    using ClientTransport::send;
    // A newline is appended to the message.
    void send(std::span<const std::string_view> pieces) override;
    void pause_input() override;
    void resume_input() override;
    void start(Callbacks callbacks) override;
    void close(const std::string& reason, bool by_client) override;
    // A client that stops reading is still cut off by the queue cap, or when its side goes away.
    void finish(const std::string& reason) override;
    bool input_ended() const override { return input_ended_; }

    // An upgrade in place (docs/UPGRADE.md). While an upgrade waits for quiet, it reads no more
    // from the client; while the new binary checks the state, nothing more is written either,
    // so that what the state says was read and is left to write stays true.
    void hold_input(bool held);
    void hold_output(bool held);
    // Why it cannot be carried this moment (it is ending, or discarding an oversized line);
    // empty when it can.
    std::string why_not_carried() const;
    // Its descriptors (-1 for a socket session's output, which is its input's), the bytes read
    // from the client and not yet handed out, and those queued for it and not yet written.
    int input_fd() const { return input_.fd(); }
    int output_fd() const { return output_ ? output_.fd() : -1; }
    std::string unread() const;
    std::string unwritten() const;
    // The new process, before start(): `unread` is handed out first, as if just read, and
    // `unwritten` goes out first, ahead of anything sent to the client from now on.
    void resume(std::string_view unread, std::string_view unwritten);

private:
    static void on_input_event(bufferevent* bev, short what, void* self);
    static void on_output_event(bufferevent* bev, short what, void* self);
    static void on_output_drained(bufferevent* bev, void* self);
    // The output buffer changed: bytes taken from it are the client reading.
    static void on_output_changed(evbuffer* buffer, const evbuffer_cb_info* info, void* self);
    // Whether a message of `size` bytes may join the `queued` ones; cuts the client off when
    // the cap says it stopped reading.
    bool make_room(std::size_t queued, std::size_t size);
    // After a message was queued behind `queued_before` bytes.
    void sent(std::size_t queued_before);
    // The bufferevent written to the client (the input's own, for a socket session).
    bufferevent* output_bev() const { return output_ ? output_.get() : input_.get(); }
    // A line over max_message_bytes was discarded: answer or report what its edges show.
    void discarded_line();
    // Bytes waiting to be written to the client.
    std::size_t queued_bytes() const;
    // Close a client that stopped reading, dropping what waits for it at once.
    void cut_off(const std::string& reason);
    void input_ended_by_client();

    BufferEvent input_;
    BufferEvent output_;  // empty for a socket session
    WriteCoalescer& writes_;
    HeldWrites output_held_;  // what the current pass of the loop holds back for the client
    OutputCap cap_;
    evbuffer_cb_entry* output_watch_ = nullptr;
    OutputBudget& budget_;
    OutputBudget::Account account_;
    LineSource source_;  // after the bufferevents: it watches the input's descriptor
    bool closed_ = false;
    bool input_ended_ = false;
    bool paused_ = false;  // the server's stdin is backed up
    bool held_ = false;    // an upgrade waits for quiet
    std::string finish_reason_;  // set once finish() waits for the output to drain
};

}  // namespace mcpd
