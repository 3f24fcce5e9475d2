// How one client session is carried: a socket attached with `mcpctl connect`, the agent's own
// pipes passed over (both StreamTransport, daemon/mux/stream_transport.h), or HTTP requests
// (HttpTransport, daemon/http/http_transport.h). The SessionTable and the routers see only this:
// lines in from the client, lines out to it, and when it ends. Each transport owns its framing
// and its back-pressure.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/json_envelope.h"
#include "common/json_splice.h"
#include "daemon/control/peer_auth.h"
#include "daemon/mux/session_sink.h"

namespace mcpd {

class ClientTransport {
public:
    struct Callbacks {
        // `line` is valid during the call and padded for scanning.
        std::function<void(ClientTransport&, wire::PaddedText line)> on_line;
        // A line its transport has read already, with what the scan found (the HTTP front door
        // reads each body once): routed without a second scan. Unset: on_line takes it.
        std::function<void(ClientTransport&, std::string_view line, const wire::Envelope&)>
            on_scanned_line;
        // The client will send nothing more (every line before was delivered); the owner calls
        // finish() once the session's requests are answered. Output still flows meanwhile.
        std::function<void(ClientTransport&)> on_input_ended;
        // `by_client`: the client ended it (not mcpd cutting it off).
        std::function<void(ClientTransport&, const std::string& reason, bool by_client)> on_closed;
        // The client answered request `raw_id` (one the server sent it) with a message over
        // max_message_bytes, which was discarded; `why` says so. May be empty.
        std::function<void(ClientTransport&, std::string_view raw_id, std::string_view why)>
            on_reply_lost;
    };

    ClientTransport(SessionId id, std::string server, PeerCredentials peer)
        : id_(id), server_(std::move(server)), peer_(std::move(peer)) {}
    virtual ~ClientTransport() = default;
    ClientTransport(const ClientTransport&) = delete;
    ClientTransport& operator=(const ClientTransport&) = delete;

    SessionId id() const { return id_; }
    // The server or group the session was attached to.
    const std::string& server() const { return server_; }
    // Who the session acts as.
    const PeerCredentials& peer() const { return peer_; }
    // "socket", "fds" or "http", as `mcpctl sessions` shows it.
    virtual const char* kind() const = 0;

    // Queue one message for the client.
    void send(std::string_view line) { send(std::span<const std::string_view>(&line, 1)); }
    // The same for a message in pieces (a reply with its id spliced in), written in order.
    virtual void send(std::span<const std::string_view> pieces) = 0;
    // An answer the router has read: `envelope` is that of the text before `changes`, which
    // made `pieces`. A transport that reads what it sends (HTTP matches answers to requests)
    // takes the envelope instead of scanning the answer again.
    virtual void send_answer(std::span<const std::string_view> pieces,
                             const wire::Envelope& /*envelope*/,
                             const wire::Replacements& /*changes*/) {
        send(pieces);
    }
    // Stop or resume taking lines from the client (the server's stdin is backed up).
    virtual void pause_input() = 0;
    virtual void resume_input() = 0;
    // Start delivering lines, once the owner has registered the session everywhere.
    virtual void start(Callbacks callbacks) = 0;
    virtual void close(const std::string& reason, bool by_client) = 0;
    // Close once everything queued for the client has gone out.
    virtual void finish(const std::string& reason) = 0;
    virtual bool closed() const = 0;
    virtual bool input_ended() const = 0;

protected:
    Callbacks callbacks_;

private:
    SessionId id_;
    std::string server_;
    PeerCredentials peer_;
};

}  // namespace mcpd
