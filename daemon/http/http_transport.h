// One MCP session carried over Streamable HTTP (2025-03-26, 2025-06-18, 2025-11-25): the
// ClientTransport the session table and routers see, over the POSTs and the GET stream the
// front door (daemon/http_front.h) hands it.
//
// A POST's messages go to the router as lines. Its requests' answers go back on that POST:
// gathered into one JSON body, or as events of its SSE stream, which also carries the progress
// of those requests. What the server sends on its own (notifications, its requests to the
// client) goes on the GET stream; with none open, on an open POST stream; else it waits,
// numbered, in the session's replay buffer (bounded) for the next GET, which also resumes from
// a Last-Event-ID.
#pragma once

#include <cstdint>
#include <list>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/json_envelope.h"
#include "common/recycling_allocator.h"
#include "daemon/http/http_carry.h"
#include "daemon/http/http_connection.h"
#include "daemon/http/sse.h"
#include "daemon/mux/client_transport.h"

namespace mcpd {

class HttpTransport final : public ClientTransport {
public:
    struct Hooks {
        // The connection with this id, or null when it is gone.
        std::function<HttpConnection*(std::uint64_t)> connection;
        // The session's initialize was answered with `result` (an InitializeResult): the
        // Mcp-Session-Id to give the client. Empty refuses the session.
        std::function<std::string(HttpTransport&, const std::string& result_line)> initialized;
        // The session closed (before the session table lets it go).
        std::function<void(HttpTransport&)> closed;
    };
    struct Settings {
        std::size_t replay_bytes = 1024 * 1024;
        std::size_t max_message_bytes = 16 * 1024 * 1024;
        // Lines held while the server's stdin is backed up; past it a POST is answered 503.
        std::size_t max_held_bytes = 4 * 1024 * 1024;
        std::size_t max_waiting_messages = 4096;
    };

    HttpTransport(SessionId id, std::string target, PeerCredentials peer, Settings settings,
                  Hooks hooks);
    ~HttpTransport() override;

    const char* kind() const override { return "http"; }
    // The Mcp-Session-Id, once the session is initialized (or was rebuilt from its id).
    const std::string& session_id() const { return session_id_; }
    void set_session_id(std::string id) { session_id_ = std::move(id); }
    const std::string& protocol() const { return protocol_; }
    // A 2026-07-28 request: the session carries one request and ends with its answer, or when
    // the client closes its stream (which cancels the request at the server).
    void set_one_shot() { one_shot_ = true; }
    void set_protocol(std::string protocol) { protocol_ = std::move(protocol); }
    // When the client last sent a request or had a stream open.
    TimePoint last_active() const { return last_active_; }
    // Whether a POST waits for answers or a GET stream is open.
    bool busy() const;

    // A POST's messages (each one JSON-RPC message), answered on `connection`: as SSE events
    // when `sse`, else one JSON body (an array when `batch`). `scanned`: the envelope of the
    // one message, when the front door has scanned it already (not read again). The messages
    // are the caller's: each is read or taken (emptied) before post returns.
    void post(HttpConnection& connection, std::span<std::string> messages, bool sse, bool batch,
              const wire::Envelope* scanned = nullptr);
    // Feed a message of mcpd's own (rebuilding a session); the answer to `swallow_id` (a raw id
    // token) is dropped, the client never sees it.
    void inject(std::string message, std::string swallow_id);
    // The GET stream; `last_event_id` resumes after that event.
    void listen(HttpConnection& connection, std::optional<std::uint64_t> last_event_id);
    // A connection of this session closed: a POST's stream cancels nothing in these eras (its
    // answers wait for a resumed GET); the GET stream is gone.
    void connection_closed(std::uint64_t connection);
    // An SSE keep-alive comment on every open stream.
    void keep_alive();

    // An upgrade in place (docs/UPGRADE.md): what the session is in the middle of (its
    // exchanges, its GET stream, its replay buffer, lines not yet handed on), `token` left for
    // the front door to fill in; and in the new process, before start(), the same again.
    CarriedHttpSession carried() const;
    void restore(const CarriedHttpSession& carried);
    // Whether connection `connection` carries an exchange of it or its GET stream.
    bool uses(std::uint64_t connection) const;
    // Whether an initialize of its own is still being answered (it gives the session its id).
    bool initializing() const { return session_id_.empty() && !one_shot_; }

    // ClientTransport
    using ClientTransport::send;
    void send(std::span<const std::string_view> pieces) override;
    void send_answer(std::span<const std::string_view> pieces, const wire::Envelope& envelope,
                     const wire::Replacements& changes) override;
    void pause_input() override { paused_ = true; }
    void resume_input() override;
    void start(Callbacks callbacks) override;
    void close(const std::string& reason, bool by_client) override;
    void finish(const std::string& reason) override { close(reason, true); }
    bool closed() const override { return closed_; }
    bool input_ended() const override { return false; }

private:
    struct Exchange {
        std::uint64_t connection = 0;
        bool sse = false;
        bool batch = false;
        bool initialize = false;
        std::vector<std::string> waiting;  // raw ids of its requests not yet answered
        std::vector<std::string> answers;  // gathered for a JSON body
        std::string session_header;        // an initialize's answer gives the id
    };

    // Hand a line to the router, or hold it while input is paused; with its envelope when
    // scanned already.
    void deliver(std::string line, const wire::Envelope* scanned = nullptr);
    // A message for the client, read: the answer of a request, progress of a streamed one, or
    // the listener's.
    // Reads of `e` only the kind of message, its id and the progress token it reports.
    void route_out(std::string line, const wire::Envelope& e);
    // An answer to request `raw_id` of exchange `number`.
    void answer(std::uint64_t number, const std::string& raw_id, std::string line);
    // Complete exchange `number` (every request answered).
    void complete(std::uint64_t number);
    // End its stream, or send its gathered answers as one JSON body.
    void finish_answer(HttpConnection& c, Exchange& exchange);
    // A message that belongs to no request: the GET stream, an open POST stream, or waiting.
    void to_listener(const std::string& line);
    HttpConnection* live(std::uint64_t connection) const;

    Settings settings_;
    Hooks hooks_;
    std::string session_id_;
    std::string protocol_;
    std::uint64_t next_exchange_ = 1;
    // An exchange and its request ids come and go with each POST: their nodes are recycled.
    std::map<std::uint64_t, Exchange, std::less<std::uint64_t>,
             RecyclingAllocator<std::pair<const std::uint64_t, Exchange>>>
        exchanges_;
    // A JSON answer's status line and headers, kept between answers, and the session id they
    // name (finish_answer).
    std::string answer_head_;
    std::string answer_head_id_;
    std::map<std::string, std::uint64_t, std::less<std::string>,
             RecyclingAllocator<std::pair<const std::string, std::uint64_t>>>
        by_request_;  // raw request id → exchange
    std::map<std::string, std::uint64_t> by_progress_;  // raw progress token → exchange
    std::optional<std::uint64_t> listener_;              // the GET stream's connection
    SseReplayBuffer replay_;
    std::uint64_t delivered_ = 0;  // the last event written to a GET stream
    // Lines while input is paused or before start (a list: no memory while it is empty,
    // where a std::deque allocates as it is made).
    std::list<std::string> held_;
    std::size_t held_bytes_ = 0;
    std::map<std::string, bool> swallow_;  // raw ids whose answers are mcpd's own
    // The id and answer lists of the last finished exchange, emptied, for the next POST's: a
    // session's POSTs usually come one at a time, so their lists are not allocated each time.
    std::vector<std::string> spare_waiting_;
    std::vector<std::string> spare_answers_;
    wire::EnvelopeScanner scanner_;
    wire::Envelope envelope_;
    TimePoint last_active_ = Clock::now();
    bool started_ = false;
    bool one_shot_ = false;
    bool paused_ = false;
    bool closed_ = false;
};

}  // namespace mcpd
