#include "daemon/mux/client_gate.h"

#include <utility>

#include "daemon/mux/jsonrpc.h"

namespace mcpd {

namespace {

GateVerdict refuse(std::string_view raw_id, int code, std::string message) {
    return GateVerdict{GateVerdict::Kind::reply, raw_id, code, std::move(message)};
}

}  // namespace

GateVerdict check_client_message(wire::ScanStatus status, const wire::Envelope& e,
                                 std::string_view line, std::string_view scan_error) {
    if (status == wire::ScanStatus::not_json)
        return refuse({}, jsonrpc::kParseError, "parse error: " + std::string(scan_error));
    if (status == wire::ScanStatus::not_object) {
        return refuse({}, jsonrpc::kInvalidRequest,
                      "invalid request: the line is " + std::string(scan_error) +
                          ", not one JSON-RPC object; send one message per line");
    }
    const std::string_view raw_id = e.id.in(line);
    const bool id_usable = e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer;
    if (e.is_response() && (!e.jsonrpc_ok || e.malformed || !id_usable))
        return GateVerdict{GateVerdict::Kind::drop_response, {}, 0, {}};
    if (!e.jsonrpc_ok) {
        return refuse(id_usable ? raw_id : std::string_view(), jsonrpc::kInvalidRequest,
                      "invalid request: \"jsonrpc\" must be \"2.0\"");
    }
    if (e.malformed) {
        return refuse(id_usable && !e.repeated_id ? raw_id : std::string_view(),
                      jsonrpc::kInvalidRequest,
                      "invalid request: a repeated id, a method that is not a string, or params "
                      "that are not an object");
    }
    if (e.id_kind == wire::IdKind::null || e.id_kind == wire::IdKind::invalid) {
        return refuse({}, jsonrpc::kInvalidRequest,
                      "invalid request: an id must be a string or an integer");
    }
    if (!e.has_method && !e.is_response()) {
        return refuse(id_usable ? raw_id : std::string_view(), jsonrpc::kInvalidRequest,
                      "invalid request: neither a request, a notification nor a response");
    }
    // Every MCP request's params is an object; by-position params reach no server.
    if (e.is_request() && e.params_array)
        return refuse(raw_id, jsonrpc::kInvalidParams, "invalid params: expected an object");
    return GateVerdict{};
}

}  // namespace mcpd
