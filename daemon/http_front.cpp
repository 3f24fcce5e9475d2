// The HTTP front door's listeners, connections and who each request acts as. The MCP endpoint
// itself is http_front_sessions.cpp.
#include "daemon/http_front.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <sys/socket.h>

#include <cerrno>

#include "common/log.h"
#include "daemon/control/control_server.h"
#include "daemon/control/tcp_listener.h"
#include "daemon/daemon.h"

namespace mcpd {

namespace {

constexpr std::size_t kMaxClients = 1024;
// Connections one user other than root and mcpd's own may hold on the unix sockets, so that no
// allowed user can take every connection from the others.
constexpr std::size_t kMaxClientsPerUser = 128;
// A server or group name, or an ad-hoc group's names joined by '+' (group_attach.h).
constexpr std::size_t kMaxTargetBytes = 1024;
constexpr Duration kSweepEvery = std::chrono::seconds(5);

// The host part of a TCP address as configured ("127.0.0.1:8080" → "127.0.0.1").
std::string bind_host_of(const std::string& address) {
    const Result<ListenAddress> parsed = parse_listen_address(address);
    if (!parsed) return {};
    return parsed->ipv6 ? "[" + parsed->host + "]" : parsed->host;
}

HttpHeaders text_headers() { return {{"Content-Type", "text/plain; charset=utf-8"}}; }

}  // namespace

HttpFront::HttpFront(Daemon& daemon)
    : daemon_(daemon), sweeper_(daemon.loop().base(), [this] { sweep(); }) {}

HttpFront::~HttpFront() {
    // Connections first: their callbacks reach into the maps below.
    for (auto& [id, client] : clients_) client.connection.reset();
}

void HttpFront::apply(const config::DaemonConfig& settings, const std::string& default_unix,
                      const SocketAccess& access) {
    std::vector<std::string> wanted;
    if (settings.http_listen) {
        wanted = *settings.http_listen;
    } else if (!default_unix.empty()) {
        wanted.push_back("unix:" + default_unix);
    }
    std::string joined;
    for (const std::string& address : wanted) joined += address + "\n";
    if (joined == applied_ && listeners_.size() == wanted.size()) return;
    applied_ = joined;
    listeners_.clear();
    for (const std::string& address : wanted) {
        auto listener = std::make_unique<Listener>();
        listener->configured = address;
        listener->address = address;
        UniqueFd kept;
        if (auto it = inherited_.find(address); it != inherited_.end()) {
            kept = std::move(it->second);
            inherited_.erase(it);
        }
        if (kept && address.starts_with("unix:")) {
            listener->unix_socket = true;
            listener->policy = origin_policy_for("");
            listener->fd = std::move(kept);
        } else if (kept) {
            Result<ListenAddress> parsed = parse_listen_address(address);
            if (!parsed) continue;
            listener->policy = origin_policy_for(bind_host_of(address));
            listener->address = to_string(parsed.value());
            listener->fd = std::move(kept);
        } else if (address.starts_with("unix:")) {
            listener->unix_socket = true;
            listener->policy = origin_policy_for("");
            Result<UniqueFd> fd = bind_control_socket(address.substr(5), access, false);
            if (!fd) {
                log::error("http_listen: " + fd.error() + "; not served over HTTP there");
                continue;
            }
            listener->fd = std::move(fd).value();
        } else {
            Result<ListenAddress> parsed = parse_listen_address(address);
            if (!parsed) continue;  // the registry was checked
            listener->policy = origin_policy_for(bind_host_of(address));
            Result<UniqueFd> fd = bind_tcp_listener(parsed.value(), "http_listen");
            if (!fd) {
                log::error("http_listen: cannot serve HTTP: " + fd.error());
                continue;
            }
            listener->fd = std::move(fd).value();
            listener->address = to_string(parsed.value());
        }
        Listener* raw = listener.get();
        listener->watcher = FdWatcher(daemon_.loop().base(), listener->fd.get(), EV_READ | EV_PERSIST,
                                      [this, raw] { accept_all(*raw); });
        log::info("MCP over HTTP served on " +
                  (raw->unix_socket ? raw->address : "http://" + raw->address + "/mcp/NAME"));
        listeners_.push_back(std::move(listener));
    }
    // Sockets of addresses no longer configured are closed (the registry was checked equal).
    inherited_.clear();
    if (!listeners_.empty() && !sweeper_.pending()) sweeper_.arm(kSweepEvery);
}

std::vector<std::pair<std::string, int>> HttpFront::listening_descriptors() const {
    std::vector<std::pair<std::string, int>> out;
    for (const auto& listener : listeners_) out.emplace_back(listener->configured, listener->fd.get());
    return out;
}

std::vector<std::string> HttpFront::addresses() const {
    std::vector<std::string> out;
    for (const auto& listener : listeners_) out.push_back(listener->address);
    return out;
}

Result<Done> HttpFront::ready_state() {
    if (signer_ && tokens_) return Done{};
    if (state_dir_.empty()) state_dir_ = default_http_state_directory();
    if (Result<Done> made = prepare_http_state_directory(state_dir_); !made) return made;
    if (!signer_) {
        Result<std::string> key = load_or_create_session_key(state_dir_ + "/session-key");
        if (!key) return key.failure();
        signer_.emplace(std::move(key).value());
    }
    if (!tokens_) {
        HttpTokens tokens(state_dir_ + "/tokens");
        if (Result<Done> loaded = tokens.load(); !loaded) return loaded;
        tokens_.emplace(std::move(tokens));
    }
    return Done{};
}

Result<std::string> HttpFront::token_for(uid_t uid, bool rotate) {
    if (Result<Done> ready = ready_state(); !ready) return ready.failure();
    return tokens_->token_for(uid, rotate);
}

void HttpFront::accept_all(Listener& listener) {
    for (;;) {
        UniqueFd fd(::accept4(listener.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!fd) return;  // EAGAIN, or short of descriptors: the next readiness tries again
        Client client;
        client.unix_socket = listener.unix_socket;
        client.policy = listener.policy;
        client.listener = listener.configured;
        if (listener.unix_socket) {
            client.peer = peer_credentials(fd.get());
            // As on the control socket: a user with no server at all gets nothing.
            if (!client.peer || !daemon_.authority().may_connect(*client.peer, daemon_.registry()))
                continue;
            if (!daemon_.authority().trusted(*client.peer)) {
                std::size_t held = 0;
                for (const auto& [id, other] : clients_)
                    held += other.peer && other.peer->uid == client.peer->uid ? 1 : 0;
                if (held >= kMaxClientsPerUser) continue;
            }
        }
        if (clients_.size() >= kMaxClients) continue;
        if (!listener.unix_socket) {
            // An answer often leaves in two writes (a stream's head, then its first event): with
            // Nagle's algorithm the second waits for the client's delayed ACK, up to 40 ms.
            const int on = 1;
            ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        }
        BufferEvent bev = BufferEvent::over(daemon_.loop().base(), std::move(fd));
        if (!bev) continue;
        add_client(next_client_++, std::move(client), std::move(bev));
    }
}

void HttpFront::add_client(std::uint64_t id, Client client, BufferEvent bev) {
    const config::DaemonConfig& settings = daemon_.registry().daemon;
    HttpConnectionLimits limits;
    limits.max_body_bytes = settings.max_message_bytes;
    limits.request_timeout = settings.http_request_timeout;
    limits.max_queued_bytes = settings.max_session_queue_bytes;
    client.connection = std::make_unique<HttpConnection>(
        id, daemon_.loop().base(), std::move(bev), limits,
        HttpConnection::Handler{
            [this, id](HttpConnection& c, HttpRequest& request) { on_request(id, c, request); },
            [this](HttpConnection& c) { on_closed(c); }});
    clients_.emplace(id, std::move(client));
}

void HttpFront::on_closed(HttpConnection& connection) {
    const std::uint64_t id = connection.id();
    // Copied first: a 2026 request's session ends here, and leaves the maps.
    std::vector<HttpTransport*> all;
    for (auto& [session, transport] : transports_) all.push_back(transport);
    for (auto& [session, transport] : pending_) all.push_back(transport);
    for (HttpTransport* transport : all) transport->connection_closed(id);
    daemon_.loop().defer([this, id] { clients_.erase(id); });
}

std::optional<PeerCredentials> HttpFront::who(Client& client, HttpConnection& connection,
                                              const HttpRequest& request) {
    const auto refuse = [&connection](int status, const std::string& why, HttpHeaders headers) {
        headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
        connection.respond(status, headers, why + "\n");
        return std::nullopt;
    };
    const std::optional<std::string_view> host = request.head.header("host");
    const std::optional<std::string_view> origin = request.head.header("origin");
    const auto same = [](const std::optional<std::string>& kept,
                         std::optional<std::string_view> sent) {
        return kept.has_value() == sent.has_value() && (!sent || *kept == *sent);
    };
    if (!client.passed || !same(client.passed_host, host) || !same(client.passed_origin, origin)) {
        client.passed = false;
        if (Result<Done> checked = check_host(host, client.policy, client.unix_socket); !checked)
            return refuse(421, checked.error(), {});
        if (Result<Done> checked = check_origin(origin, client.policy); !checked)
            return refuse(403, checked.error(), {});
        client.passed = true;
        client.passed_host = host ? std::optional<std::string>(*host) : std::nullopt;
        client.passed_origin = origin ? std::optional<std::string>(*origin) : std::nullopt;
    }
    if (client.unix_socket) return client.peer;
    const auto authorization = request.head.header("authorization");
    const std::optional<std::string_view> token =
        authorization ? bearer_credentials(*authorization) : std::nullopt;
    const HttpHeaders challenge = {{"WWW-Authenticate", "Bearer realm=\"mcpd\""}};
    if (!token)
        return refuse(401,
                      "send \"Authorization: Bearer TOKEN\"; 'mcpctl http-token' prints yours",
                      challenge);
    if (Result<Done> ready = ready_state(); !ready) {
        log::error("HTTP: " + ready.error());
        return refuse(503, "mcpd cannot read its HTTP state; see its log", {});
    }
    const std::optional<uid_t> uid = tokens_->user_of(*token);
    if (!uid)
        return refuse(401, "the bearer token is not valid; 'mcpctl http-token' prints yours",
                      challenge);
    PeerCredentials peer;
    peer.uid = *uid;
    peer.gid = *uid;
    if (const passwd* pw = ::getpwuid(*uid)) peer.gid = pw->pw_gid;
    if (!daemon_.authority().may_connect(peer, daemon_.registry()))
        return refuse(403, "uid " + std::to_string(*uid) + " may not use this mcpd", {});
    return peer;
}

void HttpFront::on_request(std::uint64_t id, HttpConnection& connection, HttpRequest& request) {
    const auto client = clients_.find(id);
    if (client == clients_.end()) return;
    const std::optional<PeerCredentials> peer = who(client->second, connection, request);
    if (!peer) return;
    const std::string& path = request.head.path;
    constexpr std::string_view kMcpPath = "/mcp/";
    const std::string target = path.starts_with(kMcpPath) ? path.substr(kMcpPath.size()) : std::string();
    if (target.empty() || target.size() > kMaxTargetBytes ||
        target.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+") !=
            std::string::npos) {
        connection.respond(404, text_headers(), "MCP is served at /mcp/NAME, NAME a server or group of this mcpd, or servers joined by '+'\n");
        return;
    }
    serve_mcp(connection, request, *peer, target);
}

void HttpFront::sweep() {
    const Duration idle = daemon_.registry().daemon.http_session_idle_timeout;
    const Duration keep_alive = daemon_.registry().daemon.http_keepalive_interval;
    const TimePoint now = Clock::now();
    std::vector<HttpTransport*> idle_ones;
    for (auto& [session, transport] : transports_) {
        if (!transport->busy() && now - transport->last_active() >= idle) idle_ones.push_back(transport);
    }
    // The session goes from memory; its id rebuilds it when the client comes back.
    for (HttpTransport* transport : idle_ones)
        transport->close("idle for http_session_idle_timeout", false);
    if (now - last_keep_alive_ >= keep_alive) {
        last_keep_alive_ = now;
        for (auto& [session, transport] : transports_) transport->keep_alive();
    }
    if (!listeners_.empty()) sweeper_.arm(std::min(kSweepEvery, keep_alive));
}

}  // namespace mcpd
