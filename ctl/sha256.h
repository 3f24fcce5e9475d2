// SHA-256 of a byte string, as lowercase hex: how adopt recognises the backups it wrote and
// the files it rewrote (adopt_record), where a weaker checksum could be forged by whoever
// plants a file beside them.
#pragma once

#include <string>
#include <string_view>

namespace mcpctl {

// The 64 hex digits of the SHA-256 (FIPS 180-4) of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace mcpctl
