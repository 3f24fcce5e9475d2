// The MCP endpoint of the HTTP front door: /mcp/NAME's POST, GET and DELETE for the session
// eras of the protocol (2025-03-26 to 2025-11-25), sessions opened at initialize and rebuilt
// from their signed id after mcpd restarts. NAME is a server, or a group (group_attach), as
// a server with filters is.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

#include "common/log.h"
#include "common/control_protocol.h"
#include "daemon/daemon.h"
#include "daemon/group_attach.h"
#include "daemon/http/modern_headers.h"
#include "daemon/http/plain_body.h"
#include "daemon/http_front.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/mcp_versions.h"

namespace mcpd {

using nlohmann::json;

namespace {

HttpHeaders text_type() { return {{"Content-Type", "text/plain; charset=utf-8"}}; }

// A JSON-RPC error with no id, as an HTTP body (a message that could not be routed at all).
std::string rpc_error_body(int code, const std::string& message) {
    return json{{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", code}, {"message", message}}}}
        .dump();
}

void refuse_rpc(HttpConnection& connection, int status, int code, const std::string& message) {
    connection.respond(status, {{"Content-Type", "application/json"}}, rpc_error_body(code, message));
}

// Whether `text` nests arrays and objects at most `most` deep (strings skipped): checked before
// a body is parsed into a tree, whose writing back is recursive, as the socket's scanner bounds it.
bool nesting_within(std::string_view text, int most) {
    int depth = 0;
    bool in_string = false;
    bool escaped = false;
    for (const char c : text) {
        if (in_string) {
            if (escaped) {
                escaped = false;
            } else if (c == '\\') {
                escaped = true;
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > most) return false;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return true;
}

// As deep as a message may nest on the socket (common/json_envelope.cpp).
constexpr int kMaxNesting = 256;

// The id of the request mcpd sends a rebuilt session's server in the client's name.
constexpr std::string_view kResumeId = "\"mcpd-http-resume\"";

}  // namespace

void HttpFront::serve_mcp(HttpConnection& connection, HttpRequest& request,
                          const PeerCredentials& peer, const std::string& target) {
    // The servers `target` names: itself, a registry group's members, or an ad-hoc group's
    // (none for a '+' list that is not one). A group whose members are not all the peer's to
    // use is, to the peer, no group at all.
    const auto may_use = [&](const std::string& name) {
        const ManagedServer* server = daemon_.pool().find(name);
        return server != nullptr && daemon_.authority().may_use(peer, server->config());
    };
    bool usable = false;
    if (std::optional<std::vector<std::string>> adhoc = adhoc_members(target)) {
        usable = !adhoc->empty() && std::all_of(adhoc->begin(), adhoc->end(), may_use);
    } else if (const config::GroupConfig* group = daemon_.registry().find_group(target)) {
        const auto member_usable = [&](const config::GroupMember& member) {
            return may_use(member.server);
        };
        usable = !group->members.empty() &&
                 std::all_of(group->members.begin(), group->members.end(), member_usable);
    } else if (target.find('+') == std::string::npos) {
        usable = may_use(target);  // a server's name: asked on every request, without a list
    }
    if (!usable) {
        connection.respond(404, text_type(), "no server named '" + target + "'\n");
        return;
    }
    if (Result<Done> ready = ready_state(); !ready) {
        log::error("HTTP: " + ready.error());
        connection.respond(503, text_type(), "mcpd cannot read its HTTP state; see its log\n");
        return;
    }
    if (const auto version = request.head.header("mcp-protocol-version")) {
        if (http_era(version) == HttpEra::unsupported) {
            json supported = legacy_protocol_versions();
            supported.push_back(kModernProtocolVersion);
            connection.respond(400, {{"Content-Type", "application/json"}},
                               json{{"jsonrpc", "2.0"},
                                    {"id", nullptr},
                                    {"error",
                                     {{"code", jsonrpc::kUnsupportedProtocolVersion},
                                      {"message", "unsupported protocol version"},
                                      {"data", {{"supported", supported}, {"requested", *version}}}}}}
                                   .dump());
            return;
        }
    }
    const std::string& method = request.head.method;
    if (method == "POST") {
        post(connection, request, peer, target);
        return;
    }
    if ((method != "GET" && method != "DELETE") ||
        http_era(request.head.header("mcp-protocol-version")) == HttpEra::stateless) {
        // The 2026-07-28 era has neither a GET stream nor sessions to end.
        connection.respond(405, {{"Allow", "GET, POST, DELETE"}, {"Content-Type", "text/plain; charset=utf-8"}},
                           "use POST, GET or DELETE\n");
        return;
    }
    const auto session = request.head.header("mcp-session-id");
    if (!session) {
        connection.respond(400, text_type(), "send the Mcp-Session-Id that initialize gave\n");
        return;
    }
    HttpTransport* transport = find_session(connection, *session, peer, target);
    if (transport == nullptr) return;
    if (method == "DELETE") {
        deleted_.insert(transport->session_id());
        transport->close("the client ended the session", true);
        connection.respond(200, {}, {});
        return;
    }
    if (!accepts(request.head.header("accept"), "text/event-stream")) {
        connection.respond(406, text_type(), "a GET stream is text/event-stream; say so in Accept\n");
        return;
    }
    std::optional<std::uint64_t> last;
    if (const auto value = request.head.header("last-event-id")) last = parse_last_event_id(*value);
    transport->listen(connection, last);
}

void HttpFront::post(HttpConnection& connection, HttpRequest& request,
                     const PeerCredentials& peer, const std::string& target) {
    const auto type = request.head.header("content-type");
    if (!type || !type->starts_with("application/json")) {
        connection.respond(415, text_type(), "send the messages as Content-Type: application/json\n");
        return;
    }
    const auto accept = request.head.header("accept");
    // A client sends the same Accept with every POST: read once, until another comes.
    if (!accept || *accept != last_accept_.text) {
        last_accept_.text = accept.value_or("");
        last_accept_.sse = accepts(accept, "text/event-stream");
        last_accept_.json = accepts(accept, "application/json");
    }
    const bool sse = last_accept_.sse;
    if (!sse && !last_accept_.json) {
        connection.respond(406, text_type(),
                           "say Accept: application/json, text/event-stream\n");
        return;
    }
    const bool stateless = http_era(request.head.header("mcp-protocol-version")) == HttpEra::stateless;
    if (std::optional<std::string> plain = stateless ? std::nullopt : plain_message(request.body)) {
        // Scanned whole, within the nesting a message may have: read by no one again.
        post_to_session(connection, request, peer, target, std::span(&*plain, 1), sse, false,
                        &body_envelope_);
        // Its buffer (the body's, taken as it is) serves the connection's next request.
        request.body.swap(*plain);
        request.body.clear();
        return;
    }
    if (!nesting_within(request.body, kMaxNesting)) {
        refuse_rpc(connection, 400, -32700,
                   "the body nests deeper than " + std::to_string(kMaxNesting) + " levels");
        return;
    }
    json body = json::parse(request.body, nullptr, false);
    if (body.is_discarded()) {
        refuse_rpc(connection, 400, -32700, "the body is not JSON");
        return;
    }
    if (stateless) {
        post_modern(connection, request, peer, target, body, sse);
        return;
    }
    const bool batch = body.is_array();
    std::vector<std::string> messages;
    const json* initialize = nullptr;
    if (batch) {
        if (body.empty()) {
            refuse_rpc(connection, 400, -32600, "an empty batch");
            return;
        }
        for (const json& message : body) {
            if (message.is_object() && message.value("method", json()) == "initialize") initialize = &message;
            messages.push_back(message.dump());
        }
    } else if (body.is_object()) {
        if (body.value("method", json()) == "initialize") initialize = &body;
        messages.push_back(body.dump());
    } else {
        refuse_rpc(connection, 400, -32600, "a message is a JSON object");
        return;
    }
    if (initialize != nullptr) {
        if (batch) {
            refuse_rpc(connection, 400, -32600, "initialize comes alone, not in a batch");
            return;
        }
        const json params = initialize->value("params", json::object());
        const json capabilities = params.is_object() ? params.value("capabilities", json::object()) : json::object();
        const json client_info = params.is_object() ? params.value("clientInfo", json::object()) : json::object();
        HttpTransport* transport = open_session(connection, peer, target, {}, capabilities, client_info, {});
        if (transport == nullptr) return;
        transport->post(connection, messages, sse, false);
        return;
    }
    post_to_session(connection, request, peer, target, messages, sse, batch);
}

void HttpFront::post_to_session(HttpConnection& connection, const HttpRequest& request,
                                const PeerCredentials& peer, const std::string& target,
                                std::span<std::string> messages, bool sse, bool batch,
                                const wire::Envelope* scanned) {
    const auto session = request.head.header("mcp-session-id");
    if (!session) {
        refuse_rpc(connection, 400, -32600,
                   "no Mcp-Session-Id: initialize first, then send the id it gave with every request");
        return;
    }
    HttpTransport* transport = find_session(connection, *session, peer, target);
    if (transport == nullptr) return;
    if (const auto version = request.head.header("mcp-protocol-version");
        version && !transport->protocol().empty() && *version != transport->protocol()) {
        connection.respond(400, text_type(),
                           "MCP-Protocol-Version is not the revision this session negotiated (" +
                               transport->protocol() + ")\n");
        return;
    }
    if (batch && transport->protocol() != "2025-03-26") {
        refuse_rpc(connection, 400, -32600,
                   "batches are part of protocol 2025-03-26 only; this session speaks " + transport->protocol());
        return;
    }
    transport->post(connection, messages, sse, batch, scanned);
}

std::optional<std::string> HttpFront::plain_message(std::string& body) {
    const std::size_t limit = daemon_.registry().daemon.max_message_bytes;
    if (body_scanner_ == nullptr || body_scanner_limit_ != limit) {
        body_scanner_ = std::make_unique<wire::EnvelopeScanner>(limit + 4096);
        body_scanner_limit_ = limit;
    }
    return plain_body_message(body, limit, *body_scanner_, body_envelope_);
}

HttpTransport* HttpFront::open_session(HttpConnection& connection, const PeerCredentials& peer,
                                       const std::string& target, const std::string& protocol,
                                       const json& capabilities, const json& client_info,
                                       std::string session_id) {
    std::size_t held = 0;
    for (const auto& [key, transport] : transports_) held += transport->peer().uid == peer.uid ? 1 : 0;
    for (const auto& [key, transport] : pending_) held += transport->peer().uid == peer.uid ? 1 : 0;
    const config::DaemonConfig& settings = daemon_.registry().daemon;
    if (held >= settings.http_max_sessions_per_user) {
        connection.respond(429, text_type(),
                           "uid " + std::to_string(peer.uid) + " holds " + std::to_string(held) +
                               " HTTP sessions, the most http_max_sessions_per_user allows; end "
                               "some (DELETE) or wait for idle ones to go\n");
        return nullptr;
    }
    // A group, or a server with filters, is a group session; any other server a plain one.
    std::optional<GroupSpec> spec;
    ManagedServer* server = nullptr;
    if (const std::optional<std::vector<std::string>> adhoc = adhoc_members(target)) {
        spec = adhoc_group(*adhoc);
    } else if (const config::GroupConfig* group = daemon_.registry().find_group(target)) {
        spec = registry_group(*group);
    } else {
        server = daemon_.pool().find(target);
        if (server == nullptr) return nullptr;
        if (!server->config().filters.empty()) spec = solo_group(server->config());
    }
    std::optional<GroupPlan> plan;
    std::optional<Project> project;
    if (spec) {
        std::variant<GroupPlan, GroupRefusal> planned = plan_group(daemon_, peer, std::move(*spec), {});
        if (const auto* refusal = std::get_if<GroupRefusal>(&planned)) {
            if (!refusal->missing.empty()) {
                connection.respond(404, text_type(), "no server named '" + target + "'\n");
            } else {
                connection.respond(refusal->code == control::code::bad_request ? 400 : 503,
                                   text_type(), refusal->message + "\n");
            }
            return nullptr;
        }
        plan = std::get<GroupPlan>(std::move(planned));
    } else {
        if (server->supervisor().state() == ServerState::failed) {
            connection.respond(503, text_type(), "server '" + target + "' is failed: " + server->failure() + "\n");
            return nullptr;
        }
        Placement::Admission admission =
            daemon_.placement().admit(*server, {}, peer, daemon_.authority().trusted(peer));
        if (!admission.refused_code.empty()) {
            connection.respond(503, text_type(), admission.refusal + "\n");
            return nullptr;
        }
        project = std::move(admission.project);
    }
    const SessionId id = plan ? plan->id : daemon_.sessions().next_id();
    std::unique_ptr<HttpTransport> transport = make_transport(id, target, peer, capabilities, client_info);
    HttpTransport* raw = transport.get();
    if (session_id.empty()) {
        pending_[id] = raw;
    } else {
        raw->set_session_id(session_id);
        raw->set_protocol(protocol);
        transports_[session_id] = raw;
    }
    if (plan) {
        BuiltGroup built = build_group(daemon_, std::move(*plan));
        daemon_.sessions().open_group(std::move(built.group), std::move(built.instances),
                                      std::move(transport), ConnectionLimits::Slot(), nullptr);
    } else {
        daemon_.sessions().open(daemon_.placement().place(*server, id, project), std::move(transport),
                                ConnectionLimits::Slot(), nullptr);
    }
    return raw;
}

std::unique_ptr<HttpTransport> HttpFront::make_transport(SessionId id, const std::string& target,
                                                         const PeerCredentials& peer,
                                                         const json& capabilities,
                                                         const json& client_info) {
    const config::DaemonConfig& settings = daemon_.registry().daemon;
    HttpTransport::Settings transport_settings;
    transport_settings.replay_bytes = settings.http_replay_bytes;
    transport_settings.max_message_bytes = settings.max_message_bytes;
    transport_settings.max_held_bytes = settings.max_session_queue_bytes;
    HttpTransport::Hooks hooks;
    hooks.connection = [this](std::uint64_t client) -> HttpConnection* {
        const auto it = clients_.find(client);
        return it == clients_.end() ? nullptr : it->second.connection.get();
    };
    hooks.initialized = [this, capabilities, client_info](HttpTransport& transport, const std::string& line) {
        return initialized(transport, line, capabilities, client_info);
    };
    hooks.closed = [this](HttpTransport& transport) {
        pending_.erase(transport.id());
        const auto it = transports_.find(transport.session_id());
        if (it != transports_.end() && it->second == &transport) transports_.erase(it);
    };
    return std::make_unique<HttpTransport>(id, target, peer, transport_settings, std::move(hooks));
}

std::string HttpFront::initialized(HttpTransport& transport, const std::string& result_line,
                                   const json& capabilities, const json& client_info) {
    const json answer = json::parse(result_line, nullptr, false);
    const json* result = answer.is_object() && answer.contains("result") ? &answer["result"] : nullptr;
    if (result == nullptr || !result->is_object() || !result->contains("protocolVersion") ||
        !(*result)["protocolVersion"].is_string()) {
        // A failed initialize opens nothing: the session goes once this answer is out.
        const SessionId id = transport.id();
        daemon_.loop().defer([this, id] {
            const auto it = pending_.find(id);
            if (it != pending_.end()) it->second->close("its initialize failed", false);
        });
        return {};
    }
    HttpSessionClaims claims;
    claims.target = transport.server();
    claims.uid = transport.peer().uid;
    claims.protocol_version = (*result)["protocolVersion"].get<std::string>();
    claims.client_capabilities = capabilities.is_object() ? capabilities : json::object();
    claims.client_info = client_info.is_object() ? client_info : json::object();
    // Unique across restarts too: the clock's nanoseconds, and a count within this run.
    claims.serial = static_cast<std::uint64_t>(
                        std::chrono::system_clock::now().time_since_epoch().count()) +
                    ++serial_;
    std::string id = signer_->sign(claims);
    transport.set_protocol(claims.protocol_version);
    pending_.erase(transport.id());
    transports_[id] = &transport;
    return id;
}

HttpTransport* HttpFront::find_session(HttpConnection& connection, std::string_view id,
                                       const PeerCredentials& peer, const std::string& target) {
    const auto not_found = [&connection] {
        // The spec's answer for a session that does not exist: the client starts a new one.
        refuse_rpc(connection, 404, -32001, "no such session; initialize a new one");
        return nullptr;
    };
    if (deleted_.contains(id)) return not_found();
    if (const auto it = transports_.find(id); it != transports_.end()) {
        HttpTransport* transport = it->second;
        if (transport->peer().uid != peer.uid || transport->server() != target) return not_found();
        return transport;
    }
    const Result<HttpSessionClaims> claims = signer_->verify(id);
    if (!claims || claims->uid != peer.uid || claims->target != target) {
        if (!claims) log::info("HTTP: refused a session id: " + claims.error());
        return not_found();
    }
    // A session of an earlier run of mcpd (or one let go when idle): rebuilt as it was.
    HttpTransport* transport =
        open_session(connection, peer, target, claims->protocol_version,
                     claims->client_capabilities, claims->client_info, std::string(id));
    if (transport == nullptr) return nullptr;
    log::info(target, "session " + std::to_string(transport->id()) + " rebuilt from its HTTP session id");
    const json initialize = {{"jsonrpc", "2.0"},
                             {"id", "mcpd-http-resume"},
                             {"method", "initialize"},
                             {"params",
                              {{"protocolVersion", claims->protocol_version},
                               {"capabilities", claims->client_capabilities},
                               {"clientInfo", claims->client_info}}}};
    transport->inject(initialize.dump(), std::string(kResumeId));
    transport->inject(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", {});
    return transport;
}

}  // namespace mcpd
