// base64url (RFC 4648 §5) without padding, as session ids and other tokens in URLs and headers
// carry bytes. Decoding is strict so that every text decodes from exactly one spelling: a
// token changed anywhere, even in its unused last bits, never reads back as the same bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mcpd {

// `bytes` in the alphabet A-Z a-z 0-9 - _, without '=' padding.
std::string base64url_encode(std::string_view bytes);

// The bytes `text` encodes; nothing when it holds padding or any character outside the
// alphabet, has a length of 4n+1 (no byte count gives that), or sets bits of its last
// character that encode no byte.
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace mcpd
