// HMAC-SHA-256 (RFC 2104) over common/sha256, and a comparison that takes as long whatever the
// bytes: what signs and checks the HTTP front door's session ids (daemon/http/session_token).
#pragma once

#include <array>
#include <string_view>

namespace mcpd {

// The 32-byte HMAC-SHA-256 of `message` under `key` (of any length: a key over 64 bytes is
// hashed first, as RFC 2104 says).
std::array<unsigned char, 32> hmac_sha256(std::string_view key, std::string_view message);

// Whether `a` and `b` hold the same bytes, in a time that does not depend on where they first
// differ, so a peer cannot guess a signature a byte at a time. Different lengths return at
// once: lengths are not secret.
bool equal_in_constant_time(std::string_view a, std::string_view b);

}  // namespace mcpd
