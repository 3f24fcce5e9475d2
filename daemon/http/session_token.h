// Signed MCP session ids for the HTTP front door: the id a client sends back in Mcp-Session-Id
// carries what the session was (its target, user, protocol version and client), signed with a
// key kept on disk, so that a restarted daemon rebuilds the session from the id alone instead
// of answering 404 to every client it had.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mcpd {

struct HttpSessionClaims {
    std::string target;            // server or group name the session talks to (/mcp/NAME)
    uid_t uid = 0;                 // the user the session acts as
    std::string protocol_version;  // negotiated, e.g. "2025-06-18"
    nlohmann::json client_capabilities = nlohmann::json::object();
    nlohmann::json client_info = nlohmann::json::object();
    std::uint64_t serial = 0;  // distinguishes sessions of one user on one target

    bool operator==(const HttpSessionClaims&) const = default;
};

inline constexpr std::size_t kMaxSessionIdBytes = 4096;

class SessionTokenSigner {
public:
    // `key`: the secret (32 bytes from load_or_create_session_key).
    explicit SessionTokenSigner(std::string key);

    // "m1." + base64url(the claims as compact JSON) + "." + base64url(HMAC-SHA-256 of what
    // precedes the second dot): visible ASCII only, as MCP requires of a session id.
    // An id that would pass kMaxSessionIdBytes keeps less of what the client declared, in
    // steps until it fits: each of client_capabilities' members becomes {} (the keys stay),
    // then client_info keeps only its "name" and "version" strings cut to 64 bytes each, then
    // client_capabilities becomes {}. A client_capabilities or client_info that is not an
    // object is signed as {}. Only a target and protocol version of kilobytes themselves
    // (mcpd's own names, never a peer's) could still pass the limit: that id is returned
    // as it is, verify refuses it, and the caller should refuse such a target.
    std::string sign(const HttpSessionClaims& claims) const;

    // The claims of an id sign() made with this key. Refused (a sentence saying why, never
    // echoing the id) when malformed, over kMaxSessionIdBytes, of another format version, or
    // not signed with this key; every field's JSON type is checked.
    Result<HttpSessionClaims> verify(std::string_view id) const;

private:
    std::string key_;
};

// The key file (0600, created with 32 bytes from getrandom(2) when missing, written atomically
// through a temporary file renamed in the same directory). Refused when it is not a regular
// file owned by the effective uid, has group or other permission bits, or has another size;
// the sentence names the file and what to do.
Result<std::string> load_or_create_session_key(const std::filesystem::path& file);

}  // namespace mcpd
