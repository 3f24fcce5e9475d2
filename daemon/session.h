// One MCP client session's transport: lines in from the client, lines out to it.
//
// A session reads either the control connection it was attached on, or descriptors an
// `mcpctl connect` passed over (the agent's own pipes). Output to a client that stops reading
// is capped: past the cap the session is cut off, so one slow client never holds up the
// server or anyone else; its queue also counts in the daemon-wide OutputBudget, which cuts the
// largest queues first. Input can be paused while the server's stdin is backed up.
#pragma once

#include <event2/bufferevent.h>
#include <event2/event.h>

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/json_envelope.h"
#include "common/line_reader.h"
#include "daemon/output_budget.h"
#include "daemon/peer_auth.h"
#include "daemon/router.h"

namespace mcpd {

class Session {
public:
    struct Callbacks {
        // `line` lies in the session's read buffer (valid during the call), padded for scanning.
        std::function<void(Session&, wire::PaddedText line)> on_line;
        // The client closed its input (every line before it was delivered); the owner calls
        // finish() once the session's requests are answered. Output still flows meanwhile.
        std::function<void(Session&)> on_input_ended;
        // `by_client`: the client closed its side (not mcpd cutting it off).
        std::function<void(Session&, const std::string& reason, bool by_client)> on_closed;
    };

    // Takes ownership of `input` and `output` (the same bufferevent for a socket session).
    // The input's descriptor is read directly (anything already buffered in `input` is taken
    // over); the bufferevents only write, and report write errors. What waits in `output`
    // counts in `budget` until the session is freed.
    Session(SessionId id, std::string server, PeerCredentials peer, bufferevent* input,
            bufferevent* output, std::size_t max_message_bytes, std::size_t max_queue_bytes,
            OutputBudget& budget, Callbacks callbacks);
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    SessionId id() const { return id_; }
    const std::string& server() const { return server_; }
    const PeerCredentials& peer() const { return peer_; }
    bool passed_fds() const { return input_ != output_; }
    bool closed() const { return closed_; }

    // Queue one message for the client (a newline is appended).
    void send(std::string_view line);
    // The same for a message in pieces (a reply with its id spliced in), written in order.
    void send(std::span<const std::string_view> pieces);
    void pause_input();
    void resume_input();
    // Start reading (after the owner has registered the session everywhere).
    void start();
    void close(const std::string& reason, bool by_client);
    // Close once everything queued for the client has been written (a client that stops
    // reading is still cut off by the queue cap, or when its side goes away).
    void finish(const std::string& reason);
    bool input_ended() const { return input_ended_; }

private:
    static void on_readable(evutil_socket_t fd, short what, void* self);
    static void on_input_event(bufferevent* bev, short what, void* self);
    static void on_output_event(bufferevent* bev, short what, void* self);
    static void on_output_drained(bufferevent* bev, void* self);
    void read_lines(bool at_eof);
    // Bytes waiting to be written to the client.
    std::size_t queued_bytes() const;
    // Close a client that stopped reading, dropping what waits for it at once.
    void cut_off(const std::string& reason);
    void input_ended_by_client();

    SessionId id_;
    std::string server_;
    PeerCredentials peer_;
    bufferevent* input_;
    bufferevent* output_;
    std::size_t max_queue_;
    OutputBudget& budget_;
    OutputBudget::Account account_;
    Callbacks callbacks_;
    event* read_event_ = nullptr;
    LineReader reader_;
    bool paused_ = false;
    bool closed_ = false;
    bool input_ended_ = false;
    std::string finish_reason_;  // set once finish() waits for the output to drain
};

}  // namespace mcpd
