// SHA-256 of a byte string, as lowercase hex: how adopt recognises the backups it wrote and
// the files it rewrote (ctl/adopt_record), and what the daemon's list cache is keyed by, where
// a weaker checksum could be forged by whoever plants a file or chooses a project directory.
// Written here rather than linking a crypto library for one digest of small inputs.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace mcpd {

// The 32 bytes of the SHA-256 (FIPS 180-4) of `bytes`: what common/hmac builds on.
std::array<unsigned char, 32> sha256_digest(std::string_view bytes);

// The 64 hex digits of the SHA-256 (FIPS 180-4) of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace mcpd
