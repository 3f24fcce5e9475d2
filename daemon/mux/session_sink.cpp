#include "daemon/mux/session_sink.h"

namespace mcpd {

void SessionSink::send_spliced(SessionId session, std::span<const std::string_view> pieces) {
    send(session, wire::joined(pieces));
}

void SessionSink::send_answer(SessionId session, std::span<const std::string_view> pieces,
                              const wire::Envelope&, const wire::Replacements&) {
    send_spliced(session, pieces);
}

void SessionSink::server_away(SessionId, std::string_view) {}

void SessionSink::server_back(SessionId) {}

}  // namespace mcpd
