// The usual body of a POST to an MCP session: one message, on one line, that is not
// initialize. Taken as it is (checked by the envelope scanner, no JSON tree built and written
// back), so that an HTTP session's request costs what a socket session's does.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/json_envelope.h"

namespace mcpd {

// `body` without the blanks around it, when it is one JSON object with no line break inside,
// within `max_bytes`, valid by `scanner`, well-formed and not initialize; none otherwise (the
// caller takes its general path, which answers every other case). `envelope` is the scan's.
std::optional<std::string> plain_body_message(std::string_view body, std::size_t max_bytes,
                                              wire::EnvelopeScanner& scanner,
                                              wire::Envelope& envelope);
// The same, the message taken out of `body` (left empty) when it has no blanks around it: the
// usual body is scanned where it lies and not copied. `body` is unchanged when none is given.
std::optional<std::string> plain_body_message(std::string& body, std::size_t max_bytes,
                                              wire::EnvelopeScanner& scanner,
                                              wire::Envelope& envelope);

}  // namespace mcpd
