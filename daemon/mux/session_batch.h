// JSON-RPC batches of 2025-03-26 sessions: a JSON array of messages on one line, split into
// its messages for the router, and the answers to its requests gathered into one array.
//
// Pure logic, like the router. The daemon hands every session line to SessionBatches::on_line,
// which gives the router a batch of a session that negotiated 2025-03-26 element by element,
// each as a line of its own; every line the router writes to a session passes
// SessionBatches::hold, which keeps the answers to a batch's requests until the last is in
// and writes them as one array.
// Everything else for the session (notifications, server requests, answers to lines that were
// not in a batch) is not held. Batches were added by 2025-03-26 and removed by 2025-06-18;
// sessions of any other version get the router's -32600 for an array, as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_envelope.h"

namespace mcpd {

using SessionId = std::uint64_t;  // as in daemon/mux/router.h

// The one protocol revision with batches.
inline constexpr std::string_view kBatchProtocol = "2025-03-26";
// The most messages one batch may hold. Real clients batch a handful of calls; the bound
// keeps one line of tiny elements (a 16 MiB line holds millions of "{}") from turning into
// as many router calls and error replies, and caps what a batch keeps in memory.
inline constexpr std::size_t kMaxBatchElements = 1000;

// Whether `line` is a JSON array: its first byte that is not whitespace is '['.
bool looks_like_batch(std::string_view line);

struct BatchSplit {
    enum class Status {
        ok,         // `elements` holds each element's exact text, in order
        not_array,  // not valid JSON, or not an array: the router answers it as a line
        empty,      // [] : one -32600 (JSON-RPC 2.0)
        too_large,  // over kMaxBatchElements: one -32600
    };
    Status status = Status::not_array;
    std::vector<std::string_view> elements;  // views into the line
};

// Validates a whole line as JSON (as strictly as the router does) and splits an array.
class BatchSplitter {
public:
    explicit BatchSplitter(std::size_t max_message_bytes);
    ~BatchSplitter();
    BatchSplitter(const BatchSplitter&) = delete;
    BatchSplitter& operator=(const BatchSplitter&) = delete;

    BatchSplit split(wire::PaddedText line);

private:
    struct Parser;
    std::unique_ptr<Parser> parser_;
    wire::EnvelopeScanner scanner_;
    wire::Envelope envelope_;
};

// One session's open batches: which of its requests each still waits for, and the answers it
// holds. Usage for one batch: open(); for each element element_started(), route it,
// element_routed(element); close(). Any other line of the session: line_started(), route it,
// line_routed(line). Every message for the session goes through offer().
//
// What the router writes to the session while it handles one of the session's lines is that
// line's answer (the router writes nothing else then): the element's, or, for a line outside
// a batch, not the batch's even when its id is one a batch waits for (a reused id's -32600).
// Later answers are matched by id.
class BatchCollector {
public:
    // A batch's reply is kept within `max_reply_bytes` (mcpd's max_message_bytes: it never
    // writes a line it would not read): an answer that would not fit is replaced by -32603.
    explicit BatchCollector(std::size_t max_reply_bytes);
    ~BatchCollector();
    BatchCollector(const BatchCollector&) = delete;
    BatchCollector& operator=(const BatchCollector&) = delete;

    void open();
    // What the session is sent from now until element_routed() answers this element.
    void element_started();
    // `element` (its text) was handed to the router. Unanswered, a valid request waits for
    // the answer with its id; a notifications/cancelled stops the wait for the request it names.
    void element_routed(std::string_view element);
    // Every element was routed: the batch is complete now unless it waits for answers.
    void close();

    // What the session is sent from now until line_routed() answers a line outside a batch.
    void line_started();
    // That line was handed to the router. A cancellation ends the wait for its request (the
    // router drops the answer, so none would come).
    void line_routed(wire::PaddedText line);

    // A message for the session: true when it is held (an answer to a batch's request).
    bool offer(std::span<const std::string_view> pieces);

    // Completed batches' replies (each one JSON array, no newline), taken out.
    std::vector<std::string> take_replies();
    // No batch open or waiting: the collector can go.
    bool idle() const { return batches_.empty(); }
    // Requests of this session's batches not answered yet.
    std::size_t awaiting() const { return awaiting_; }

private:
    struct Batch {
        std::vector<std::string> answers;
        std::size_t bytes = 2;             // the reply's length so far: brackets, answers, commas
        std::vector<std::string> awaited;  // raw ids of its requests not yet answered
        bool closed = false;
    };

    void add_answer(Batch& batch, std::string_view answer, std::string_view raw_id);
    void complete_if_done(std::uint64_t key);
    // Stop waiting for `raw_id` in the oldest batch that waits for it.
    void cancel(std::string_view raw_id);

    std::size_t max_reply_bytes_;
    wire::EnvelopeScanner scanner_;
    wire::Envelope envelope_;
    std::string text_;                        // a message joined from its pieces, for scanning
    std::map<std::uint64_t, Batch> batches_;  // oldest first
    std::uint64_t next_key_ = 1;
    std::uint64_t open_key_ = 0;  // the batch being routed, 0 when none
    bool in_element_ = false;
    bool in_line_ = false;
    std::size_t element_answers_ = 0;
    std::size_t awaiting_ = 0;
    std::vector<std::string> replies_;
};

// Every session's batches, for the daemon.
class SessionBatches {
public:
    using Route = std::function<void(wire::PaddedText line)>;
    using Write = std::function<void(std::string_view line)>;

    explicit SessionBatches(std::size_t max_message_bytes);
    ~SessionBatches();

    // A line from `session`, to `route` as it is, or, when `batches` (the session negotiated
    // kBatchProtocol) and it is a JSON array, each element to `route` as a line of its own.
    // mcpd's refusals and completed replies go to `write`. An array that is not valid JSON is
    // routed as it is (the router answers -32700, as for any line).
    void on_line(SessionId session, wire::PaddedText line, bool batches, const Route& route,
                 const Write& write);
    // A message for `session`: true when held; completed replies go to `write`.
    bool hold(SessionId session, std::span<const std::string_view> pieces, const Write& write);
    // The session has gone: what its batches held goes with it. Never from inside on_line().
    void forget(SessionId session) { collectors_.erase(session); }
    // Sessions with a batch waiting for answers.
    std::size_t waiting_sessions() const { return collectors_.size(); }
    // Whether `session` has a batch waiting for answers (its lines and replies are watched).
    bool waiting(SessionId session) const {
        return !collectors_.empty() && collectors_.contains(session);
    }

private:
    // Split and route a batch line; false when it is not a valid JSON array.
    bool route_batch(SessionId session, wire::PaddedText line, const Route& route,
                     const Write& write);
    void flush(SessionId session, BatchCollector& collector, const Write& write);

    std::size_t max_message_bytes_;
    std::map<SessionId, std::unique_ptr<BatchCollector>> collectors_;
};

}  // namespace mcpd
