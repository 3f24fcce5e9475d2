// The state mcpd hands to the binary that replaces it (`mcpctl upgrade`, docs/UPGRADE.md): one
// text, a header line and a JSON body. The header names the format, its version, the body's
// length and its SHA-256, so a truncated, altered or foreign state is refused before anything
// of it is used. It travels in a sealed memfd: neither the old process nor the new one can
// change it once written.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/unique_fd.h"

namespace mcpd::state_file {

// The version this build writes, and the oldest it reads (a binary accepts its own version
// and the one before).
inline constexpr int kVersion = 3;
inline constexpr int kOldestVersion = 1;
// Far above any real state (a few KiB per server and session); a larger one is refused.
inline constexpr std::size_t kMaxBytes = 64 * 1024 * 1024;

// "mcpd-state VERSION LENGTH SHA256\n" followed by the body's JSON.
std::string encode(const nlohmann::json& body, int version = kVersion);

struct Decoded {
    int version = 0;
    nlohmann::json body;
    std::string digest;  // the SHA-256 of the whole text, hex: what --check-state answers with
};
// The body of a state this build can read, or why not (a sentence naming what is wrong).
Result<Decoded> decode(std::string_view text);

// The text in a new memfd, sealed against every change, its offset at 0.
Result<UniqueFd> to_sealed_memfd(std::string_view text);
// Everything in `fd` from offset 0 (at most kMaxBytes and one more, to tell a larger one).
Result<std::string> read_all(int fd);

// The line a binary prints when it has read a state: how the old process knows the new one
// understood it (a binary that prints nothing, such as /bin/true, has not).
std::string acknowledgement(const Decoded& decoded);

}  // namespace mcpd::state_file
