// Fuzz target: what a peer of the HTTP front door chooses, through the pure readers mcpd runs
// on it before anything else: the request head (daemon/http/http_message), Accept, Host and
// Origin (origin_check), a session id (session_token), Last-Event-ID (sse), and the 2026-07-28
// headers against a body (modern_headers).
//
// The first byte picks what the rest is; the rest is the peer's text.
//
// Invariants: no crash and no exception; a head that parses has a path starting with '/' and
// answers header() for each name it holds; a session id that verifies is signed again to an id
// that verifies to the same claims; a Host or Origin accepted names one of the policy's hosts.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "daemon/control/http_message.h"
#include "daemon/http/modern_headers.h"
#include "daemon/http/origin_check.h"
#include "daemon/http/session_token.h"
#include "daemon/http/sse.h"
#include "fuzz_input.h"

namespace {

using namespace mcpd;

void fuzz_head(std::string_view text) {
    const Result<HttpRequestHead> head = parse_request_head(text);
    const std::size_t end = request_head_end(text);
    // Arriving in two parts, split anywhere: the second search, going on from where the first
    // stopped, finds the same end.
    const std::string_view first = text.substr(0, text.size() / 3);
    if (request_head_end(first) == std::string_view::npos) {
        FUZZ_CHECK(request_head_end(text, head_search_from(first)) == end,
                   "a head's end searched for in two parts is found elsewhere");
    }
    if (!head) return;
    FUZZ_CHECK(!head->path.empty() && head->path.front() == '/', "a parsed head with a path not from /");
    for (const auto& [name, value] : head->headers()) {
        FUZZ_CHECK(head->header(name) == value,
                   "a header the head holds is not found: " + std::string(name));
    }
    // A copy reads the same (the head keeps offsets, not addresses).
    const HttpRequestHead copy = head.value();
    FUZZ_CHECK(copy.headers() == head->headers(), "a copied head reads differently");
    (void)accepts(head->header("accept"), "text/event-stream");
    (void)accepts(head->header("accept"), "application/json");
    const OriginPolicy policy = origin_policy_for("127.0.0.1");
    (void)check_host(head->header("host"), policy, false);
    (void)check_origin(head->header("origin"), policy);
    if (const auto last = head->header("last-event-id")) (void)parse_last_event_id(*last);
    if (const auto name = head->header("mcp-name")) (void)decode_header_value(*name);
}

void fuzz_session_id(std::string_view text) {
    const SessionTokenSigner signer(std::string(32, 'k'));
    const Result<HttpSessionClaims> claims = signer.verify(text);
    if (!claims) return;
    const std::string again = signer.sign(claims.value());
    const Result<HttpSessionClaims> back = signer.verify(again);
    FUZZ_CHECK(back.ok() && back.value() == claims.value(), "a verified id does not sign back to itself");
}

void fuzz_host_origin(mcpd::fuzz::FuzzInput& in) {
    const std::string_view bind = in.chunk();
    const OriginPolicy policy = origin_policy_for(bind);
    const std::string_view host = in.chunk();
    const std::string_view origin = in.chunk();
    (void)check_host(host, policy, in.flag());
    (void)check_origin(origin, policy);
}

void fuzz_modern(mcpd::fuzz::FuzzInput& in) {
    const std::string head_text = "POST /mcp/x HTTP/1.1\r\nMCP-Protocol-Version: " + std::string(in.chunk()) +
                                  "\r\nMcp-Method: " + std::string(in.chunk()) + "\r\nMcp-Name: " +
                                  std::string(in.chunk()) + "\r\n\r\n";
    const Result<HttpRequestHead> head = parse_request_head(head_text);
    if (!head) return;
    const nlohmann::json body = nlohmann::json::parse(in.chunk(), nullptr, false);
    if (body.is_discarded()) return;
    (void)check_modern_headers(head.value(), body);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    mcpd::fuzz::FuzzInput in(data, size);
    const std::uint8_t what = in.byte();
    const std::string_view rest(reinterpret_cast<const char*>(data) + (size > 0 ? 1 : 0), size > 0 ? size - 1 : 0);
    switch (what % 4) {
        case 0:
            fuzz_head(rest);
            break;
        case 1:
            fuzz_session_id(rest);
            break;
        case 2:
            fuzz_host_origin(in);
            break;
        default:
            fuzz_modern(in);
            break;
    }
    return 0;
}
