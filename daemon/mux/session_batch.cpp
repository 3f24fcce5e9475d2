#include "daemon/mux/session_batch.h"

#include <simdjson.h>

#include <algorithm>
#include <limits>

#include "common/ascii.h"
#include "common/json_arrays.h"
#include "daemon/mux/jsonrpc.h"

namespace mcpd {

namespace od = simdjson::ondemand;

namespace {

bool usable_id(const wire::Envelope& e) {
    return e.id_kind == wire::IdKind::string || e.id_kind == wire::IdKind::integer;
}

// Room for a message longer than max_message_bytes by the ids spliced into it.
std::size_t scan_limit(std::size_t max_message_bytes) {
    return max_message_bytes > std::numeric_limits<std::size_t>::max() / 2 ? max_message_bytes
                                                                           : 2 * max_message_bytes;
}

}  // namespace

bool looks_like_batch(std::string_view line) {
    for (char c : line) {
        if (!is_json_space(c)) return c == '[';
    }
    return false;
}

// ---------------------------------------------------------------------------------------------

struct BatchSplitter::Parser {
    explicit Parser(std::size_t max) : parser(max) {}
    od::parser parser;
};

BatchSplitter::BatchSplitter(std::size_t max_message_bytes)
    : parser_(std::make_unique<Parser>(max_message_bytes + simdjson::SIMDJSON_PADDING)),
      scanner_(max_message_bytes) {}

BatchSplitter::~BatchSplitter() = default;

BatchSplit BatchSplitter::split(wire::PaddedText line) {
    using Status = BatchSplit::Status;
    BatchSplit out;
    const std::string_view text = line.text;
    // The envelope scanner validates everything an element holds, so the walk below only
    // has to find where each element starts.
    if (!looks_like_batch(text) || scanner_.scan(line, envelope_) != wire::ScanStatus::not_object)
        return out;
    const simdjson::padded_string_view input(text.data(), text.size(),
                                             text.size() + wire::kScanPadding);
    od::document doc;
    od::array array;
    if (parser_->parser.iterate(input).get(doc) != simdjson::SUCCESS ||
        doc.get_array().get(array) != simdjson::SUCCESS)
        return out;
    if (!array_elements(array, out.elements, kMaxBatchElements)) {
        // Valid JSON (the scanner said so): the only way to fail is one element too many.
        if (out.elements.size() == kMaxBatchElements) out.status = Status::too_large;
        out.elements.clear();
        return out;
    }
    if (out.elements.empty()) {
        out.status = Status::empty;
        return out;
    }
    out.status = Status::ok;
    return out;
}

// ---------------------------------------------------------------------------------------------

BatchCollector::BatchCollector(std::size_t max_reply_bytes)
    : max_reply_bytes_(max_reply_bytes), scanner_(scan_limit(max_reply_bytes)) {}

BatchCollector::~BatchCollector() = default;

void BatchCollector::open() {
    open_key_ = next_key_++;
    batches_[open_key_];
}

void BatchCollector::element_started() {
    in_element_ = open_key_ != 0;
    element_answers_ = 0;
}

void BatchCollector::element_routed(std::string_view element) {
    in_element_ = false;
    if (open_key_ == 0 || element_answers_ > 0) return;  // answered at once
    text_.assign(element);
    if (scanner_.scan(text_, envelope_) != wire::ScanStatus::ok) return;
    const wire::Envelope& e = envelope_;
    if (!e.jsonrpc_ok || e.malformed) return;
    if (e.is_request() && usable_id(e)) {
        batches_[open_key_].awaited.emplace_back(e.id.in(text_));
        ++awaiting_;
    } else if (e.is_notification() && e.method_is("notifications/cancelled") &&
               !e.request_id.empty()) {
        cancel(e.request_id.in(text_));
    }
}

void BatchCollector::close() {
    const std::uint64_t key = open_key_;
    open_key_ = 0;
    in_element_ = false;
    const auto it = batches_.find(key);
    if (it == batches_.end()) return;
    it->second.closed = true;
    complete_if_done(key);
}

bool BatchCollector::offer(std::span<const std::string_view> pieces) {
    if (in_line_ || (!in_element_ && awaiting_ == 0)) return false;
    wire::join(pieces, text_);
    if (scanner_.scan(text_, envelope_) != wire::ScanStatus::ok) return false;
    const wire::Envelope& e = envelope_;
    if (!e.is_response()) return false;
    const std::string_view raw_id = usable_id(e) ? e.id.in(text_) : std::string_view();
    if (in_element_) {
        // Nothing else is written to this session while the router handles its line: this
        // is that element's answer (an error for an invalid one, or a local answer).
        ++element_answers_;
        add_answer(batches_[open_key_], text_, raw_id);
        return true;
    }
    if (raw_id.empty()) return false;
    for (auto& [key, batch] : batches_) {
        const auto it = std::find(batch.awaited.begin(), batch.awaited.end(), raw_id);
        if (it == batch.awaited.end()) continue;
        batch.awaited.erase(it);
        --awaiting_;
        add_answer(batch, text_, raw_id);
        complete_if_done(key);
        return true;
    }
    return false;
}

void BatchCollector::line_started() {
    in_line_ = true;
}

void BatchCollector::line_routed(wire::PaddedText line) {
    in_line_ = false;
    if (awaiting_ == 0) return;
    if (scanner_.scan(line, envelope_) != wire::ScanStatus::ok) return;
    const wire::Envelope& e = envelope_;
    if (e.jsonrpc_ok && !e.malformed && e.is_notification() &&
        e.method_is("notifications/cancelled") && !e.request_id.empty()) {
        cancel(e.request_id.in(line.text));
    }
}

std::vector<std::string> BatchCollector::take_replies() {
    std::vector<std::string> out;
    out.swap(replies_);
    return out;
}

void BatchCollector::add_answer(Batch& batch, std::string_view answer, std::string_view raw_id) {
    const std::size_t comma = batch.answers.empty() ? 0 : 1;
    if (batch.bytes + comma + answer.size() > max_reply_bytes_) {
        std::string message =
            "the answer to this request would make its batch's reply longer than "
            "max_message_bytes (";
        message += std::to_string(max_reply_bytes_);
        message += " bytes); send the request on a line of its own";
        batch.answers.push_back(jsonrpc::error(raw_id, jsonrpc::kInternalError, message));
    } else {
        batch.answers.emplace_back(answer);
    }
    batch.bytes += comma + batch.answers.back().size();
}

void BatchCollector::complete_if_done(std::uint64_t key) {
    const auto it = batches_.find(key);
    if (it == batches_.end() || !it->second.closed || !it->second.awaited.empty()) return;
    const Batch& batch = it->second;
    // Only notifications and responses: JSON-RPC sends nothing back at all.
    if (!batch.answers.empty()) {
        std::string reply;
        reply.reserve(batch.bytes);
        reply += '[';
        for (const std::string& answer : batch.answers) {
            if (reply.size() > 1) reply += ',';
            reply += answer;
        }
        reply += ']';
        replies_.push_back(std::move(reply));
    }
    batches_.erase(it);
}

void BatchCollector::cancel(std::string_view raw_id) {
    for (auto& [key, batch] : batches_) {
        const auto it = std::find(batch.awaited.begin(), batch.awaited.end(), raw_id);
        if (it == batch.awaited.end()) continue;
        batch.awaited.erase(it);
        --awaiting_;
        complete_if_done(key);
        return;
    }
}

// ---------------------------------------------------------------------------------------------

SessionBatches::SessionBatches(std::size_t max_message_bytes)
    : max_message_bytes_(max_message_bytes) {}

SessionBatches::~SessionBatches() = default;

void SessionBatches::on_line(SessionId session, wire::PaddedText line, bool batches,
                             const Route& route, const Write& write) {
    if (batches && route_batch(session, line, route, write)) return;
    const auto it = collectors_.empty() ? collectors_.end() : collectors_.find(session);
    if (it == collectors_.end()) {
        route(line);
        return;
    }
    BatchCollector& collector = *it->second;
    collector.line_started();
    route(line);
    collector.line_routed(line);
    flush(session, collector, write);
}

bool SessionBatches::route_batch(SessionId session, wire::PaddedText line, const Route& route,
                                 const Write& write) {
    // A splitter of its own each time: batches are rare, and its parsers' memory (sized by
    // the longest line they saw) goes with it.
    BatchSplitter splitter(max_message_bytes_);
    const BatchSplit split = splitter.split(line);
    switch (split.status) {
        case BatchSplit::Status::not_array:
            return false;
        case BatchSplit::Status::empty:
            write(jsonrpc::error({}, jsonrpc::kInvalidRequest,
                                 "invalid request: an empty batch (JSON array); a batch holds at "
                                 "least one message"));
            return true;
        case BatchSplit::Status::too_large: {
            std::string message = "invalid request: a batch of more than ";
            message += std::to_string(kMaxBatchElements);
            message += " messages; send them in smaller batches";
            write(jsonrpc::error({}, jsonrpc::kInvalidRequest, message));
            return true;
        }
        case BatchSplit::Status::ok:
            break;
    }
    std::unique_ptr<BatchCollector>& slot = collectors_[session];
    if (!slot) slot = std::make_unique<BatchCollector>(max_message_bytes_);
    BatchCollector& collector = *slot;
    collector.open();
    std::string element;
    for (std::string_view text : split.elements) {
        element.reserve(text.size() + wire::kScanPadding);
        element.assign(text);
        collector.element_started();
        route(wire::PaddedText{element});
        collector.element_routed(element);
    }
    collector.close();
    flush(session, collector, write);
    return true;
}

bool SessionBatches::hold(SessionId session, std::span<const std::string_view> pieces,
                          const Write& write) {
    if (collectors_.empty()) return false;
    const auto it = collectors_.find(session);
    if (it == collectors_.end()) return false;
    const bool held = it->second->offer(pieces);
    if (held) flush(session, *it->second, write);
    return held;
}

void SessionBatches::flush(SessionId session, BatchCollector& collector, const Write& write) {
    for (const std::string& reply : collector.take_replies()) write(reply);
    if (collector.idle()) collectors_.erase(session);
}

}  // namespace mcpd
