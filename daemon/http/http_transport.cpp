#include "daemon/http/http_transport.h"

#include <algorithm>

#include "common/log.h"
#include "daemon/mux/jsonrpc.h"

namespace mcpd {

namespace {

const HttpHeaders kSseHeaders = {{"Content-Type", "text/event-stream"},
                                 {"Cache-Control", "no-cache"},
                                 {"X-Accel-Buffering", "no"}};

// The raw id token of `line`'s envelope, as written (quotes included for a string).
std::string raw_token(const wire::Span& span, std::string_view line) {
    return std::string(span.in(line));
}

}  // namespace

HttpTransport::HttpTransport(SessionId id, std::string target, PeerCredentials peer,
                             Settings settings, Hooks hooks)
    : ClientTransport(id, std::move(target), std::move(peer)),
      settings_(settings),
      hooks_(std::move(hooks)),
      replay_(settings.replay_bytes),
      // What the router writes is at most a message plus the ids it splices in.
      scanner_(settings.max_message_bytes + 4096) {}

HttpTransport::~HttpTransport() {
    // Let go without close() (the session table cleared at exit): the front forgets it too.
    if (!closed_ && hooks_.closed) hooks_.closed(*this);
}

bool HttpTransport::busy() const {
    if (listener_ && live(*listener_) != nullptr) return true;
    return !exchanges_.empty();
}

HttpConnection* HttpTransport::live(std::uint64_t connection) const {
    HttpConnection* c = hooks_.connection(connection);
    return c != nullptr && !c->closed() ? c : nullptr;
}

void HttpTransport::start(Callbacks callbacks) {
    callbacks_ = std::move(callbacks);
    started_ = true;
    resume_input();
}

void HttpTransport::resume_input() {
    paused_ = false;
    while (started_ && !paused_ && !closed_ && !held_.empty()) {
        std::string line = std::move(held_.front());
        held_.pop_front();
        held_bytes_ -= line.size();
        line.reserve(line.size() + wire::kScanPadding);
        callbacks_.on_line(*this, wire::PaddedText{line});
    }
}

void HttpTransport::deliver(std::string line, const wire::Envelope* scanned) {
    if (!started_ || paused_ || !held_.empty()) {
        held_bytes_ += line.size();
        held_.push_back(std::move(line));
        return;
    }
    if (scanned != nullptr && callbacks_.on_scanned_line) {
        callbacks_.on_scanned_line(*this, line, *scanned);
        return;
    }
    line.reserve(line.size() + wire::kScanPadding);
    callbacks_.on_line(*this, wire::PaddedText{line});
}

void HttpTransport::inject(std::string message, std::string swallow_id) {
    if (!swallow_id.empty()) swallow_[swallow_id] = true;
    deliver(std::move(message));
}

namespace {

// `list`, emptied, as the spare for the next exchange: a short one only (a batch's may be long).
void keep_spare(std::vector<std::string>& list, std::vector<std::string>& spare) {
    constexpr std::size_t kMostKept = 8;
    if (list.capacity() == 0 || list.capacity() > kMostKept || spare.capacity() >= list.capacity())
        return;
    list.clear();
    spare.swap(list);
}

}  // namespace

void HttpTransport::post(HttpConnection& connection, std::span<std::string> messages, bool sse,
                         bool batch, const wire::Envelope* scanned) {
    if (messages.size() != 1) scanned = nullptr;
    if (closed_) {
        connection.respond(404, {{"Content-Type", "text/plain; charset=utf-8"}}, "the session ended\n");
        return;
    }
    if (paused_ && held_bytes_ > settings_.max_held_bytes) {
        // The server is not taking what waits already: the client is told to come back, as a
        // socket client would find its writes blocked.
        connection.respond(503, {{"Retry-After", "1"}, {"Content-Type", "text/plain; charset=utf-8"}},
                           "the server is behind; send this again in a moment\n");
        return;
    }
    last_active_ = Clock::now();
    const std::uint64_t number = next_exchange_++;
    Exchange exchange;
    exchange.waiting.swap(spare_waiting_);
    exchange.answers.swap(spare_answers_);
    exchange.connection = connection.id();
    exchange.sse = sse;
    exchange.batch = batch;
    // A request whose id is still in flight in this session is answered here, on its own POST:
    // the router's answer to a repeated id would go to the POST that holds the first one.
    std::vector<std::string> refused;  // a refused message is emptied: it is not forwarded
    for (std::size_t i = 0; i < messages.size(); ++i) {
        std::string& message = messages[i];
        if (scanned == nullptr && scanner_.scan(message, envelope_) != wire::ScanStatus::ok)
            continue;
        const wire::Envelope& e = scanned != nullptr ? *scanned : envelope_;
        if (!e.is_request()) continue;
        const std::string id = raw_token(e.id, message);
        if (by_request_.contains(id) || swallow_.contains(id) ||
            std::find(exchange.waiting.begin(), exchange.waiting.end(), id) !=
                exchange.waiting.end()) {
            refused.push_back(jsonrpc::error(id, jsonrpc::kInvalidRequest,
                                             "duplicate request id: a request with this id is "
                                             "still in flight"));
            message.clear();
            continue;
        }
        exchange.waiting.push_back(id);
        by_request_[id] = number;
        if (e.method_is("initialize")) {
            // Its answer carries the session's id in a header: never a stream.
            exchange.initialize = true;
            exchange.sse = false;
        }
        if (!e.progress_token.empty()) by_progress_[raw_token(e.progress_token, message)] = number;
    }
    if (exchange.waiting.empty() && refused.empty()) {
        // Only notifications and answers: accepted, nothing to wait for.
        HttpHeaders headers;
        if (!session_id_.empty()) headers.emplace_back("Mcp-Session-Id", session_id_);
        connection.respond(202, headers, {});
        keep_spare(exchange.waiting, spare_waiting_);
        keep_spare(exchange.answers, spare_answers_);
    } else if (exchange.waiting.empty()) {
        // Nothing goes to the server: the refusals are the whole answer.
        exchange.sse = false;
        exchange.answers = std::move(refused);
        finish_answer(connection, exchange);
        keep_spare(exchange.waiting, spare_waiting_);
    } else {
        if (exchange.sse) {
            HttpHeaders headers = kSseHeaders;
            if (!session_id_.empty()) headers.emplace_back("Mcp-Session-Id", session_id_);
            connection.open_stream(200, headers);
            for (const std::string& line : refused) connection.stream(sse_event({}, line));
        } else {
            for (std::string& line : refused) exchange.answers.push_back(std::move(line));
        }
        exchanges_[number] = std::move(exchange);
    }
    for (std::string& message : messages)
        if (!message.empty()) deliver(std::move(message), scanned);
}

void HttpTransport::listen(HttpConnection& connection, std::optional<std::uint64_t> last_event_id) {
    if (closed_) {
        connection.respond(404, {{"Content-Type", "text/plain; charset=utf-8"}}, "the session ended\n");
        return;
    }
    last_active_ = Clock::now();
    if (listener_) {
        if (HttpConnection* old = live(*listener_)) old->end_stream();
    }
    listener_ = connection.id();
    HttpHeaders headers = kSseHeaders;
    if (!session_id_.empty()) headers.emplace_back("Mcp-Session-Id", session_id_);
    connection.open_stream(200, headers);
    // What the client missed: after the event it names, or what never reached a GET stream.
    const std::uint64_t after = last_event_id.value_or(delivered_);
    if (after < replay_.last_id()) {
        if (const auto missed = replay_.since(after, "get")) {
            for (const std::string& event : *missed) connection.stream(event);
        } else {
            log::warning(server(), "session " + std::to_string(id()) +
                                       ": a stream resumed after events no longer kept "
                                       "(http_replay_bytes); some were lost");
        }
    }
    delivered_ = replay_.last_id();
}

void HttpTransport::connection_closed(std::uint64_t connection) {
    if (listener_ == connection) listener_.reset();
    if (one_shot_) {
        for (const auto& [number, exchange] : exchanges_) {
            // Closing a 2026 request's stream is its cancellation: the session goes, and the
            // server is told to stop.
            if (exchange.connection == connection) {
                close("the client closed the request's stream", true);
                return;
            }
        }
    }
    for (auto& [number, exchange] : exchanges_) {
        // Its answers, when they come, go to the listener or wait for a resumed GET.
        if (exchange.connection == connection) exchange.connection = 0;
    }
}

void HttpTransport::keep_alive() {
    const std::string comment = sse_comment("keep-alive");
    if (listener_) {
        if (HttpConnection* c = live(*listener_)) c->stream(comment);
    }
    for (const auto& [number, exchange] : exchanges_) {
        if (!exchange.sse) continue;
        if (HttpConnection* c = live(exchange.connection)) c->stream(comment);
    }
}

void HttpTransport::send(std::span<const std::string_view> pieces) {
    if (closed_) return;
    std::string line = wire::joined(pieces);
    if (scanner_.scan(line, envelope_) != wire::ScanStatus::ok) {
        to_listener(line);
        return;
    }
    route_out(std::move(line), envelope_);
}

void HttpTransport::send_answer(std::span<const std::string_view> pieces,
                                const wire::Envelope& envelope, const wire::Replacements& changes) {
    if (closed_) return;
    std::string line = wire::joined(pieces);
    // The router's reading of the answer, moved to the spliced text: nothing is read twice.
    // Only what route_out reads is taken over, not the envelope's strings.
    wire::Envelope routed;
    routed.has_method = envelope.has_method;
    routed.has_result = envelope.has_result;
    routed.has_error = envelope.has_error;
    routed.id_kind = envelope.id_kind;
    routed.id = envelope.id;
    routed.reported_token = envelope.reported_token;
    routed.after_splice(changes);
    route_out(std::move(line), routed);
}

void HttpTransport::route_out(std::string line, const wire::Envelope& e) {
    if (e.is_response() && e.id_kind != wire::IdKind::absent) {
        const std::string id = raw_token(e.id, line);
        if (swallow_.erase(id) > 0) return;
        const auto found = by_request_.find(id);
        if (found != by_request_.end()) {
            const std::uint64_t number = found->second;
            by_request_.erase(found);
            answer(number, id, std::move(line));
            return;
        }
    } else if (e.is_notification() && !e.reported_token.empty()) {
        const auto found = by_progress_.find(raw_token(e.reported_token, line));
        if (found != by_progress_.end()) {
            const auto exchange = exchanges_.find(found->second);
            if (exchange != exchanges_.end() && exchange->second.sse) {
                if (HttpConnection* c = live(exchange->second.connection)) {
                    c->stream(sse_event({}, line));
                    return;
                }
            }
        }
    }
    to_listener(line);
}

void HttpTransport::answer(std::uint64_t number, const std::string& raw_id, std::string line) {
    const auto it = exchanges_.find(number);
    if (it == exchanges_.end()) {
        to_listener(line);
        return;
    }
    Exchange& exchange = it->second;
    std::erase(exchange.waiting, raw_id);
    if (exchange.initialize && exchange.session_header.empty() && session_id_.empty()) {
        exchange.session_header = hooks_.initialized(*this, line);
        if (!exchange.session_header.empty()) session_id_ = exchange.session_header;
    }
    HttpConnection* c = live(exchange.connection);
    if (c == nullptr) {
        // The POST's connection went: the answer waits for the GET stream.
        to_listener(line);
    } else if (exchange.sse) {
        c->stream(sse_event({}, line));
    } else {
        exchange.answers.push_back(std::move(line));
    }
    if (exchange.waiting.empty()) complete(number);
}

void HttpTransport::complete(std::uint64_t number) {
    const auto it = exchanges_.find(number);
    if (it == exchanges_.end()) return;
    Exchange exchange = std::move(it->second);
    exchanges_.erase(it);
    std::erase_if(by_progress_, [number](const auto& entry) { return entry.second == number; });
    last_active_ = Clock::now();
    if (HttpConnection* c = live(exchange.connection)) finish_answer(*c, exchange);
    keep_spare(exchange.waiting, spare_waiting_);
    keep_spare(exchange.answers, spare_answers_);
    // A 2026 request's session is done once its one request is answered.
    if (one_shot_ && exchanges_.empty()) close("answered", true);
}

void HttpTransport::finish_answer(HttpConnection& c, Exchange& exchange) {
    if (exchange.sse) {
        c.end_stream();
        return;
    }
    std::string body;
    if (exchange.batch) {
        body = "[";
        for (std::size_t i = 0; i < exchange.answers.size(); ++i) {
            if (i > 0) body += ',';
            body += exchange.answers[i];
        }
        body += "]";
    } else if (!exchange.answers.empty()) {
        body = std::move(exchange.answers.front());  // the exchange is done with
    }
    const std::string& id = exchange.session_header.empty() ? session_id_ : exchange.session_header;
    if (id.empty()) {
        c.respond(200, {{"Content-Type", "application/json"}}, body);
        return;
    }
    // The same status line and headers on every answer: built once per session id, kept.
    if (answer_head_.empty() || answer_head_id_ != id) {
        answer_head_ = http_response_head(
            200, {{"Content-Type", "application/json"}, {"Mcp-Session-Id", id}});
        answer_head_id_ = id;
    }
    c.respond_with_head(200, answer_head_, body);
}

void HttpTransport::to_listener(const std::string& line) {
    const std::uint64_t event = replay_.append(line, "get");
    if (listener_) {
        if (HttpConnection* c = live(*listener_)) {
            c->stream(sse_event(std::to_string(event), line));
            delivered_ = event;
            return;
        }
    }
    // No GET stream: an open POST stream takes what is not its own (the SDKs read any message
    // on any stream); it stays numbered for a GET that resumes.
    for (const auto& [number, exchange] : exchanges_) {
        if (!exchange.sse) continue;
        if (HttpConnection* c = live(exchange.connection)) {
            c->stream(sse_event({}, line));
            delivered_ = event;
            return;
        }
    }
}

bool HttpTransport::uses(std::uint64_t connection) const {
    if (listener_ == connection) return true;
    return std::any_of(exchanges_.begin(), exchanges_.end(),
                       [connection](const auto& entry) { return entry.second.connection == connection; });
}

CarriedHttpSession HttpTransport::carried() const {
    CarriedHttpSession out;
    out.session_id = session_id_;
    out.protocol = protocol_;
    out.one_shot = one_shot_;
    out.idle_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - last_active_).count();
    out.next_exchange = next_exchange_;
    for (const auto& [number, e] : exchanges_)
        out.exchanges.push_back({number, e.connection, e.sse, e.batch, e.initialize, e.waiting, e.answers,
                                 e.session_header});
    out.by_request.insert(by_request_.begin(), by_request_.end());
    out.by_progress = by_progress_;
    out.listener = listener_;
    out.replay = replay_.carried();
    out.delivered = delivered_;
    out.held.assign(held_.begin(), held_.end());
    for (const auto& [id, swallowed] : swallow_) out.swallow.push_back(id);
    return out;
}

void HttpTransport::restore(const CarriedHttpSession& c) {
    session_id_ = c.session_id;
    protocol_ = c.protocol;
    one_shot_ = c.one_shot;
    last_active_ = Clock::now() - std::chrono::milliseconds(std::max<std::int64_t>(c.idle_ms, 0));
    next_exchange_ = c.next_exchange;
    for (const CarriedHttpExchange& e : c.exchanges)
        exchanges_[e.number] = Exchange{e.connection, e.sse, e.batch, e.initialize, e.waiting, e.answers,
                                        e.session_header};
    by_request_.clear();
    by_request_.insert(c.by_request.begin(), c.by_request.end());
    by_progress_ = c.by_progress;
    listener_ = c.listener;
    replay_.restore(c.replay);
    delivered_ = c.delivered;
    for (const std::string& line : c.held) {
        held_bytes_ += line.size();
        held_.push_back(line);
    }
    for (const std::string& id : c.swallow) swallow_[id] = true;
}

void HttpTransport::close(const std::string& reason, bool by_client) {
    if (closed_) return;
    closed_ = true;
    // First, so that nothing below finds it open.
    if (hooks_.closed) hooks_.closed(*this);
    // Requests still waiting are answered, so no client hangs on a session that ended.
    for (auto& [number, exchange] : exchanges_) {
        HttpConnection* c = live(exchange.connection);
        if (c == nullptr) continue;
        for (const std::string& id : exchange.waiting) {
            const std::string line =
                jsonrpc::error(id, jsonrpc::kInternalError, "the session ended: " + reason);
            if (exchange.sse) {
                c->stream(sse_event({}, line));
            } else {
                exchange.answers.push_back(line);
            }
        }
        exchange.waiting.clear();
    }
    std::vector<std::uint64_t> numbers;
    for (const auto& [number, exchange] : exchanges_) numbers.push_back(number);
    for (std::uint64_t number : numbers) complete(number);
    if (listener_) {
        if (HttpConnection* c = live(*listener_)) c->end_stream();
        listener_.reset();
    }
    if (callbacks_.on_closed) callbacks_.on_closed(*this, reason, by_client);
}

}  // namespace mcpd
