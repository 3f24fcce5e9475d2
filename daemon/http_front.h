// The Streamable HTTP front door ([daemon] http_listen, docs/HTTP.md): every pooled server at
// /mcp/NAME, on unix sockets (checked as the control socket is; a request acts as the peer
// that connected) and TCP addresses (a request acts as the user whose bearer token it sends).
// Host and Origin are checked on both (DNS rebinding). Sessions are HttpTransports in the
// daemon's SessionTable, routed as every other session; their Mcp-Session-Id is signed and
// carries what rebuilds the session after mcpd restarts (daemon/http/session_token.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/json_envelope.h"
#include "common/unique_fd.h"
#include "config/registry.h"
#include "daemon/control/peer_auth.h"
#include "daemon/control/socket_directory.h"
#include "daemon/http/http_connection.h"
#include "daemon/http/http_tokens.h"
#include "daemon/http/http_transport.h"
#include "daemon/http/origin_check.h"
#include "daemon/http/session_token.h"
#include "daemon/io/event_loop.h"
#include "daemon/io/fd_watcher.h"

namespace mcpd {

class Daemon;

class HttpFront {
public:
    explicit HttpFront(Daemon& daemon);
    ~HttpFront();
    HttpFront(const HttpFront&) = delete;
    HttpFront& operator=(const HttpFront&) = delete;

    // Listen where `settings` says (its http_listen, else `default_unix` when not empty),
    // replacing what listened before when that changed. Failures are logged; the rest serves.
    void apply(const config::DaemonConfig& settings, const std::string& default_unix,
               const SocketAccess& access);
    // The addresses served now ("unix:/run/…", "127.0.0.1:8080").
    std::vector<std::string> addresses() const;
    // An upgrade in place (docs/UPGRADE.md): each listening socket by the address it was
    // configured as, kept open across the exec; and, in the new process before the first
    // apply(), those sockets, used instead of binding the same addresses again.
    std::vector<std::pair<std::string, int>> listening_descriptors() const;
    void inherit(std::map<std::string, UniqueFd> listeners) { inherited_ = std::move(listeners); }
    // User `uid`'s bearer token for the TCP addresses (made or rotated on request).
    Result<std::string> token_for(uid_t uid, bool rotate);
    // HTTP sessions open now.
    std::size_t session_count() const { return transports_.size(); }
    // HTTP connections open now, idle kept-alive ones included.
    std::size_t connection_count() const { return clients_.size(); }

    // An upgrade in place (http_front_carry.cpp, docs/UPGRADE.md). Holding input stops reading
    // every connection and accepting new ones; holding output stops writing to them.
    void hold_input(bool held);
    void hold_output(bool held);
    // What must pass before the sessions can be carried (an initialize being answered).
    void upgrade_blockers(std::vector<std::string>& passing) const;
    // Its connections and counters; and the signed token of session `id` (`session_id`: its
    // Mcp-Session-Id, which is its token; empty for a 2026-07-28 request's session).
    CarriedHttpFront carried() const;
    std::string carried_token(SessionId id, const std::string& session_id) const;
    // In the new process, after apply(): the connections on their descriptors (each closed when
    // it is not a socket or its listener is gone, a unix peer checked again as at accept); and
    // a carried session's transport, acting as the user its verified token names.
    void take_carried(const CarriedHttpFront& front);
    Result<std::unique_ptr<HttpTransport>> adopt_session(SessionId id, const std::string& target,
                                                         const CarriedHttpSession& carried);
    // Once every session is back: a connection waiting for an answer no session will give
    // (its session could not be carried) is closed, as a restart would close it.
    void close_orphans();

private:
    struct Listener {
        std::string configured;  // as the registry wrote it
        std::string address;  // as configured
        bool unix_socket = false;
        OriginPolicy policy;
        UniqueFd fd;
        FdWatcher watcher;
    };
    struct Client {
        std::unique_ptr<HttpConnection> connection;
        bool unix_socket = false;
        OriginPolicy policy;
        std::optional<PeerCredentials> peer;  // a unix socket's peer
        std::string listener;  // the address it was accepted on, as configured
        // The Host and Origin of its last request that passed check_host and check_origin: a
        // client sends the same pair with every request, which is then not read again.
        bool passed = false;
        std::optional<std::string> passed_host;
        std::optional<std::string> passed_origin;
    };

    Result<Done> ready_state();
    void accept_all(Listener& listener);
    void on_request(std::uint64_t client, HttpConnection& connection, HttpRequest& request);
    void on_closed(HttpConnection& connection);
    // Who the request acts as; answers and returns none when it may act as nobody.
    std::optional<PeerCredentials> who(Client& client, HttpConnection& connection,
                                       const HttpRequest& request);
    // http_front_sessions.cpp: the MCP endpoint.
    // `request`'s body may be taken (the usual message, moved on to its session).
    void serve_mcp(HttpConnection& connection, HttpRequest& request,
                   const PeerCredentials& peer, const std::string& target);
    void post(HttpConnection& connection, HttpRequest& request, const PeerCredentials& peer,
              const std::string& target);
    // The usual POST body, one message on one line that is not initialize, checked by the
    // envelope scanner and kept as it is: no JSON tree. None: the body takes the general path.
    std::optional<std::string> plain_message(std::string& body);
    // A POST's messages to the session its Mcp-Session-Id names (answered when it names none).
    void post_to_session(HttpConnection& connection, const HttpRequest& request,
                         const PeerCredentials& peer, const std::string& target,
                         std::span<std::string> messages, bool sse, bool batch,
                         const wire::Envelope* scanned = nullptr);
    // http_front_modern.cpp: a 2026-07-28 request, a session of its own.
    void post_modern(HttpConnection& connection, const HttpRequest& request,
                     const PeerCredentials& peer, const std::string& target,
                     const nlohmann::json& message, bool sse);
    // A new session for an initialize POST; null when refused (answered).
    HttpTransport* open_session(HttpConnection& connection, const PeerCredentials& peer,
                                const std::string& target, const std::string& protocol,
                                const nlohmann::json& capabilities, const nlohmann::json& client_info,
                                std::string session_id);
    // The session `id` names for `peer` and `target`: open, or rebuilt from the id. Null when
    // it names none (answered: 404, as the spec asks of a session that does not exist).
    HttpTransport* find_session(HttpConnection& connection, std::string_view id,
                                const PeerCredentials& peer, const std::string& target);
    // A session's transport with the hooks that tie it to this front door; `capabilities` and
    // `client_info` are what its initialize declared (signed into its id once answered).
    std::unique_ptr<HttpTransport> make_transport(SessionId id, const std::string& target,
                                                  const PeerCredentials& peer,
                                                  const nlohmann::json& capabilities,
                                                  const nlohmann::json& client_info);
    void add_client(std::uint64_t id, Client client, BufferEvent bev);
    std::string initialized(HttpTransport& transport, const std::string& result_line,
                            const nlohmann::json& capabilities, const nlohmann::json& client_info);
    void sweep();

    Daemon& daemon_;
    std::map<std::string, UniqueFd> inherited_;  // by configured address, until used
    std::string applied_;  // the addresses applied last, joined
    std::vector<std::unique_ptr<Listener>> listeners_;
    std::map<std::uint64_t, Client> clients_;
    std::uint64_t next_client_ = 1;
    std::string state_dir_;
    std::optional<SessionTokenSigner> signer_;
    std::optional<HttpTokens> tokens_;
    std::map<std::string, HttpTransport*, std::less<>> transports_;  // by Mcp-Session-Id
    std::map<SessionId, HttpTransport*> pending_;       // initialize not answered yet
    std::set<std::string, std::less<>> deleted_;        // ended with DELETE
    std::uint64_t serial_ = 0;
    TimePoint last_keep_alive_ = Clock::now();
    Timer sweeper_;
    // For plain_message: sized by max_message_bytes when first used, again when it changes.
    std::unique_ptr<wire::EnvelopeScanner> body_scanner_;
    std::size_t body_scanner_limit_ = 0;
    wire::Envelope body_envelope_;
    // What the last Accept value read allows (post): absent reads as "".
    struct AcceptRead {
        std::string text;
        bool sse = false;
        bool json = false;
    };
    AcceptRead last_accept_;
};

}  // namespace mcpd
