// The bearer tokens of the HTTP front door's TCP addresses: one per user, which a request
// over TCP presents to act as that user (`mcpctl http-token` prints the asker's own). Kept in
// mcpd's HTTP state directory (0700) in a 0600 file of mcpd's user, one "UID TOKEN" line each,
// rewritten whole through a new file and a rename, so a crash leaves the old or the new.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace mcpd {

// Where mcpd keeps its HTTP state (the session key and the tokens): the systemd
// StateDirectory's "http", else $XDG_STATE_HOME/mcpd/http, else ~/.local/state/mcpd/http.
std::string default_http_state_directory();
// Create `directory` (0700, parents too) and check it is mcpd's user's own and private.
Result<Done> prepare_http_state_directory(const std::string& directory);

class HttpTokens {
public:
    explicit HttpTokens(std::string file) : file_(std::move(file)) {}

    // Read the file; a missing one holds no tokens. Refused when it is not mcpd's user's own
    // regular file of mode 0600, or a line cannot be read.
    Result<Done> load();
    // The user whose token `token` is (compared in constant time); none for anything else.
    std::optional<uid_t> user_of(std::string_view token) const;
    // User `uid`'s token, made when it has none or `rotate` asks for a new one (the old one
    // stops working at once), and saved.
    Result<std::string> token_for(uid_t uid, bool rotate);

private:
    Result<Done> save() const;

    std::string file_;
    std::map<uid_t, std::string> tokens_;
};

}  // namespace mcpd
