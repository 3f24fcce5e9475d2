// Where a server's router writes to its sessions: the daemon's SessionTable, or a test's
// record of what each session was sent. The router is handed one when it is made, so what it
// writes to a session goes there directly, with nothing in between.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/json_envelope.h"

namespace mcpd {

using SessionId = std::uint64_t;

class SessionSink {
public:
    virtual ~SessionSink() = default;
    virtual void send(SessionId session, std::string_view line) = 0;
    // The same for a line in pieces (a message with ids spliced in), written in order. By
    // default the pieces are joined; the daemon writes them without joining (no copy of a
    // large result).
    virtual void send_spliced(SessionId session, std::span<const std::string_view> pieces);
    // A child's answer to `session`: `pieces` are the child's line with `changes` spliced in,
    // `envelope` the child line's. By default it goes as any line; a group's member session
    // takes the envelope along (moved to the new text), so that the group does not read the
    // answer again.
    virtual void send_answer(SessionId session, std::span<const std::string_view> pieces,
                             const wire::Envelope& envelope, const wire::Replacements& changes);
    virtual void close(SessionId session, const std::string& reason) = 0;
    // The server behind `session` went away (a restart, a crash, a stop) / serves again. By
    // default nothing is done (the client sees its requests fail and list_changed); a group
    // takes the member's items out of its lists meanwhile (daemon/group_session.h).
    virtual void server_away(SessionId session, std::string_view reason);
    virtual void server_back(SessionId session);
};

}  // namespace mcpd
