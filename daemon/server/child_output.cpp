#include "daemon/server/child_output.h"

#include <nlohmann/json.hpp>


#include "common/log.h"
#include "daemon/mux/jsonrpc.h"
#include "daemon/mux/router.h"
#include "daemon/mux/session_batch.h"
#include "daemon/server/handshake.h"

namespace mcpd {

using nlohmann::json;

namespace {

constexpr unsigned kNoiseLinesLogged = 20;

}  // namespace

ChildOutput::ChildOutput(std::string server, std::size_t max_message_bytes,
                         std::function<void(std::string_view)> to_child)
    : server_(std::move(server)),
      max_message_bytes_(max_message_bytes),
      to_child_(std::move(to_child)),
      scanner_(max_message_bytes) {}

void ChildOutput::on_message(wire::PaddedText message, Handshake* handshake, Router& router) {
    if (handshake != nullptr) handshake->child_showed_life();
    dispatch(message, handshake, router, false);
}

void ChildOutput::on_batch(wire::PaddedText message, Handshake* handshake, Router& router) {
    // A splitter of its own each time: batches are rare, and its parsers' memory goes with it.
    BatchSplitter splitter(max_message_bytes_);
    const BatchSplit split = splitter.split(message);
    if (split.status != BatchSplit::Status::ok) {
        if (++noise_lines_ <= kNoiseLinesLogged)
            log::warning(server_, split.status == BatchSplit::Status::empty
                                      ? std::string("dropped an empty batch (JSON array) on stdout")
                                      : "dropped a batch (JSON array) of more than " +
                                            std::to_string(kMaxBatchElements) +
                                            " messages on stdout");
        return;
    }
    std::string element;
    for (const std::string_view text : split.elements) {
        element.reserve(text.size() + wire::kScanPadding);
        element.assign(text);
        dispatch(wire::PaddedText{element}, handshake, router, true);
    }
}

void ChildOutput::dispatch(wire::PaddedText message, Handshake* handshake, Router& router,
                           bool in_batch) {
    const std::string_view line = message.text;
    const wire::ScanStatus status = scanner_.scan(message, envelope_);
    if (status == wire::ScanStatus::not_object && !in_batch && looks_like_batch(line)) {
        // 2025-03-26 lets a server send a batch: each message in it is routed as usual.
        on_batch(message, handshake, router);
        return;
    }
    if (status != wire::ScanStatus::ok || !envelope_.jsonrpc_ok) {
        const std::string why =
            scanner_.error().empty() ? std::string("\"jsonrpc\" is not \"2.0\"") : scanner_.error();
        if (++noise_lines_ <= kNoiseLinesLogged) {
            log::warning(
                server_,
                std::string(in_batch ? "dropped a message of a batch" : "dropped a line") +
                    " on stdout that is not a JSON-RPC message (" + why + ")" +
                    std::string(noise_lines_ == kNoiseLinesLogged ? " (no more such warnings)"
                                                                  : ""));
        }
        fail_lost_reply(read_lost_message_id(line, line),
                        "the server's answer is not a valid JSON-RPC message (" + why +
                            "); it was dropped",
                        "answer not JSON", handshake, router);
        return;
    }
    const wire::Envelope& e = envelope_;
    if (e.is_request() && e.method_is("ping")) {
        // An id that is neither a string nor an integer cannot be echoed in a valid answer.
        if (e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer) {
            to_child_(jsonrpc::result(e.id.in(line), "{}"));
        } else {
            to_child_(jsonrpc::error({}, jsonrpc::kInvalidRequest,
                                     "invalid request: an id must be a string or an integer"));
        }
        return;
    }
    if (handshake != nullptr && handshake->awaits_answers() && e.is_response() &&
        e.id_kind == wire::IdKind::integer) {
        const std::optional<std::uint64_t> id = jsonrpc::given_id(e.id.in(line));
        if (id && handshake->owns(*id)) {
            json answer = json::parse(line, nullptr, false);
            // nlohmann refuses lone surrogates, which the scanner accepted (a server's
            // string cut mid-pair): read them as U+FFFD rather than lose the answer.
            if (answer.is_discarded())
                answer = json::parse(wire::without_lone_surrogates(line), nullptr, false);
            handshake->handle(answer);
            return;
        }
    }
    if (handshake == nullptr || !handshake->ready()) {
        log::debug(server_, "dropped a message sent before the handshake completed");
        return;
    }
    router.on_child_message(line, e);
}

void ChildOutput::on_oversized(std::size_t bytes, std::string_view head, std::string_view tail,
                               Handshake* handshake, Router& router) {
    const std::string limit = std::to_string(max_message_bytes_);
    log::warning(server_, "dropped a message of " + std::to_string(bytes) +
                              " bytes on stdout: over max_message_bytes (" + limit + ")");
    if (handshake == nullptr) return;
    handshake->child_showed_life();
    fail_lost_reply(read_lost_message_id(head, tail),
                    "the server's answer was " + std::to_string(bytes) +
                        " bytes, over max_message_bytes (" + limit + "); it was dropped",
                    "answer too large", handshake, router);
}

void ChildOutput::fail_lost_reply(const LostMessageId& edges, const std::string& message,
                                  std::string_view reason, Handshake* handshake, Router& router) {
    if (!edges.response || edges.request || edges.id.empty()) return;
    if (handshake == nullptr || !handshake->ready()) return;
    if (router.on_child_reply_lost(edges.id, message, reason)) {
        log::warning(server_, "answered request " + edges.id + " with an error: " + message);
    }
}

}  // namespace mcpd
