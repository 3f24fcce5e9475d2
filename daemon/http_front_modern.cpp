// The 2026-07-28 era over HTTP: no sessions and no GET stream. Each POST is one request with
// its metadata mirrored in headers (checked against the body, daemon/http/modern_headers.h),
// carried by a session of its own that ends with the answer; closing its SSE stream ends the
// session, which cancels the request at the server. subscriptions/listen is such a request
// whose stream stays open.
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "daemon/daemon.h"
#include "daemon/http/modern_headers.h"
#include "daemon/http_front.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/mcp_versions.h"

namespace mcpd {

using nlohmann::json;

void HttpFront::post_modern(HttpConnection& connection, const HttpRequest& request,
                            const PeerCredentials& peer, const std::string& target,
                            const json& message, bool sse) {
    const auto refuse = [&connection, &message](int code, const std::string& why) {
        json error = {{"jsonrpc", "2.0"}, {"id", nullptr}, {"error", {{"code", code}, {"message", why}}}};
        if (message.is_object() && message.contains("id") &&
            (message["id"].is_string() || message["id"].is_number_integer()))
            error["id"] = message["id"];
        connection.respond(400, {{"Content-Type", "application/json"}}, error.dump());
    };
    if (!message.is_object()) {
        refuse(jsonrpc::kInvalidRequest, "a 2026-07-28 request is one JSON object");
        return;
    }
    const bool has_method = message.contains("method");
    const bool has_id = message.contains("id");
    if (!has_method) {
        refuse(jsonrpc::kInvalidRequest, "a client sends no responses in the 2026-07-28 era");
        return;
    }
    if (!has_id) {
        // The era defines no notification from the client over HTTP, nor headers for one (a
        // client may still send notifications/cancelled; closing the stream is what cancels):
        // accepted and dropped.
        connection.respond(202, {}, {});
        return;
    }
    const ManagedServer* server = daemon_.pool().find(target);
    // Known to speak only the handshake: so configured, or its process runs in that era. A
    // server not running yet is asked (a dual-era one then runs in the stateless era).
    const bool legacy = server != nullptr && daemon_.registry().find_group(target) == nullptr &&
                        server->config().filters.empty() && !server->router().modern_child() &&
                        (server->config().era == config::Era::legacy ||
                         server->supervisor().state() == ServerState::running);
    if (legacy) {
        // mcpd does not translate between eras: a server that speaks the initialize handshake
        // is offered to the client as such, and the client falls back to it.
        connection.respond(400, {{"Content-Type", "application/json"}},
                           json{{"jsonrpc", "2.0"},
                                {"id", message.value("id", json())},
                                {"error",
                                 {{"code", jsonrpc::kUnsupportedProtocolVersion},
                                  {"message", "'" + target + "' speaks the initialize handshake; "
                                              "initialize with one of the supported versions"},
                                  {"data",
                                   {{"supported", legacy_protocol_versions()},
                                    {"requested", kModernProtocolVersion}}}}}}
                               .dump());
        return;
    }
    if (Result<Done> mirrored = check_modern_headers(request.head, message); !mirrored) {
        refuse(kHeaderMismatch, mirrored.error());
        return;
    }
    HttpTransport* transport = open_session(connection, peer, target, std::string(kModernProtocolVersion),
                                            json::object(), json::object(), {});
    if (transport == nullptr) return;
    transport->set_one_shot();
    transport->set_protocol(std::string(kModernProtocolVersion));
    std::string text = message.dump();
    transport->post(connection, std::span(&text, 1), sse, false);
}

}  // namespace mcpd
