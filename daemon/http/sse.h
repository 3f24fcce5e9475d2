// Server-Sent Events for the Streamable HTTP transport: the text of an event and of a
// keep-alive, and the replay buffer that lets a client that lost its stream resume it with
// Last-Event-ID.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/http/http_carry.h"

namespace mcpd {

// One event: "id: ID\n" (omitted when `id` is empty) + one "data: " line per line of `data` +
// "\n". `data` is split at every CR LF, CR and LF, so that a client reading it back gets the
// same text (lines joined by LF) and no line of it can start a field of its own. CR and LF in
// `id` are dropped for the same reason.
std::string sse_event(std::string_view id, std::string_view data);

// ": text\n\n", the keep-alive clients ignore; CR and LF in `text` become spaces.
std::string sse_comment(std::string_view text);

// What was sent on a session's streams, for Last-Event-ID: bounded in bytes, oldest dropped
// first.
class SseReplayBuffer {
public:
    explicit SseReplayBuffer(std::size_t max_bytes);

    // Numbers the event (1, 2, 3... per buffer) and keeps its text (the full formatted event,
    // with the number as its id) and `stream`, which stream it went out on ("get" or a POST's
    // key). Returns the number. An event larger than the bound on its own is numbered and
    // dropped at once.
    std::uint64_t append(std::string_view data, std::string_view stream);

    // The formatted events after `last` on `stream`, in order (0: every one, for a first GET
    // stream); nothing when the client cannot resume exactly: some event after `last` was
    // already dropped, or `last` is in the future or an event of another stream.
    std::optional<std::vector<std::string>> since(std::uint64_t last,
                                                  std::string_view stream) const;

    std::size_t bytes() const { return bytes_; }        // the events' texts and streams
    std::uint64_t last_id() const { return last_id_; }  // 0 before the first event

    // An upgrade in place: every event kept, and the numbering; and in the new process, the
    // same again (an event that is not a number above the one before it is dropped, and the
    // bound applies as at append).
    CarriedSseBuffer carried() const;
    void restore(const CarriedSseBuffer& carried);

private:
    struct Event {
        std::uint64_t id = 0;
        std::string stream;
        std::string text;
    };

    std::size_t max_bytes_;
    std::size_t bytes_ = 0;
    std::uint64_t last_id_ = 0;
    std::uint64_t dropped_through_ = 0;  // every event up to this id is gone
    std::list<Event> events_;  // (a list: no memory while empty, unlike a std::deque)
};

// The event number in a Last-Event-ID header value as sse_event was given it (a decimal
// number from 1, no sign, no leading zero); nothing when it is anything else.
std::optional<std::uint64_t> parse_last_event_id(std::string_view value);

}  // namespace mcpd
